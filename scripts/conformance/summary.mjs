// summary.mjs DIR: reads the conformance suite's results in DIR (a folder
// per scenario run, each with checks.json, and list.txt, the output of the
// suite's list command) and prints one line per scenario and the totals.
// A scenario with a failed check is FAIL, one with only warnings WARN;
// scenarios list.txt tags [extension] print as EXT and are counted apart.
// With EXPECTED_FAIL naming a file of scenarios expected to fail (a name
// first on each line; # starts a comment), a listed scenario that fails is
// XFAIL, counted apart, and one that passes is XPASS, which fails the run:
// the list (and what documents it) must say what is true.
// Exit: 1 when a scenario other than an extension failed unexpectedly, or
// a listed one passed; 2 when DIR holds no results at all, else 0.
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
if (!dir) { console.error('usage: node summary.mjs RESULTS-DIR'); process.exit(2); }

let listing = '';
try { listing = fs.readFileSync(path.join(dir, 'list.txt'), 'utf8'); } catch { /* no extensions known */ }
const extensions = new Set([...listing.matchAll(/^\s*-\s*([a-z0-9-]+)\s+\[extension\]/gm)].map((m) => m[1]));

const expected = new Set();
if (process.env.EXPECTED_FAIL) {
  for (const line of fs.readFileSync(process.env.EXPECTED_FAIL, 'utf8').split('\n')) {
    const name = line.replace(/#.*/, '').trim().split(/\s+/)[0];
    if (name) expected.add(name);
  }
}

const totals = { PASS: 0, WARN: 0, FAIL: 0, XFAIL: 0, XPASS: 0, extPass: 0, extFail: 0 };
for (const entry of fs.readdirSync(dir).sort()) {
  const file = path.join(dir, entry, 'checks.json');
  if (!fs.existsSync(file)) continue;
  const checks = JSON.parse(fs.readFileSync(file, 'utf8'));
  // A run's folder is server-SCENARIO-TIMESTAMP.
  const scenario = entry.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '');
  const having = (status) => checks.filter((c) => c.status === status);
  const failed = having('FAILURE'), warned = having('WARNING');
  let tag;
  if (extensions.has(scenario)) { tag = 'EXT'; totals[failed.length ? 'extFail' : 'extPass']++; }
  else if (expected.has(scenario)) { tag = failed.length ? 'XFAIL' : 'XPASS'; totals[tag]++; }
  else { tag = failed.length ? 'FAIL' : warned.length ? 'WARN' : 'PASS'; totals[tag]++; }
  console.log(`${tag.padEnd(5)} ${scenario.padEnd(40)} ok=${having('SUCCESS').length} fail=${failed.length} warn=${warned.length}`);
  for (const [label, list] of [['failure', failed], ['warning', warned]]) {
    for (const c of list) console.log(`        ${label} ${c.id}: ${String(c.errorMessage || c.description || '').slice(0, 200)}`);
  }
}
const core = totals.PASS + totals.WARN + totals.FAIL + totals.XFAIL + totals.XPASS;
console.log(`\nscenarios: ${core}  pass=${totals.PASS}  pass-with-warnings=${totals.WARN}  fail=${totals.FAIL}`);
if (expected.size) console.log(`expected to fail (${process.env.EXPECTED_FAIL}): failed=${totals.XFAIL}  passed=${totals.XPASS}${totals.XPASS ? ' (remove those from the list and its docs)' : ''}`);
if (totals.extPass + totals.extFail) console.log(`extension scenarios: ${totals.extPass + totals.extFail}  pass=${totals.extPass}  fail=${totals.extFail} (not counted)`);
process.exit(core === 0 ? 2 : totals.FAIL || totals.XPASS ? 1 : 0);
