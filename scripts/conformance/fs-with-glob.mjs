// fs-with-glob.mjs: node:fs with a globSync for Node.js 20 (see node20.mjs).
// It matches the one pattern shape the suite passes, "**/NAME": every file
// called NAME under the working directory, as paths relative to it.
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs;

export function globSync(pattern, options = {}) {
  const cwd = options.cwd || process.cwd();
  const name = String(pattern).replace(/^\*\*\//, '');
  const found = [];
  const walk = (dir) => {
    let entries;
    try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === name) found.push(path.relative(cwd, p));
    }
  };
  walk(cwd);
  return found;
}
