#!/usr/bin/env node
// probe.mjs: black-box checks of an MCP endpoint as an OAuth protected
// resource and as a Streamable HTTP server: the rules the official
// conformance suite leaves out (its client sends no token).
//
//   node scripts/conformance/probe.mjs https://gateway.example/mcp
//
// Checks, by group:
//   challenge  no token: 401 on POST, GET and DELETE, a Bearer challenge with
//              resource_metadata and scope and without an error code
//   metadata   RFC 9728 metadata at the challenge's URL, the path-inserted
//              well-known URL and the root: 200 JSON, resource equal to the
//              endpoint's URL, authorization_servers, scopes_supported, CORS
//   tokens     invalid, expired and wrong-audience tokens: 401 invalid_token;
//              a token in the query string refused; a token without the
//              required scope: 403 insufficient_scope with scope and
//              resource_metadata; a read-only token calling a gated tool:
//              the same 403 on a live session (step-up)
//   transport  initialize, session id characters, 202 for a notification,
//              400 without a session id, 404 for an unknown one, 401 for a
//              session without a token, another user's token refused, 400
//              for an unknown MCP-Protocol-Version, an older one accepted,
//              Origin refused (403) on POST and GET, an allowed Origin
//              served, GET opens an SSE stream (or 405), DELETE ends the
//              session and the session is 404 after it
//
// Inputs, all from the environment; a check whose input is missing is
// reported as SKIP (mcpgate-testissuer --tokens-dir writes env.sh with the
// first four):
//   MCP_TOKEN            a valid token with every scope the endpoint needs
//   MCP_LOW_SCOPE_TOKEN  a valid token without a required scope
//   MCP_WRONG_AUD_TOKEN  a token issued for another resource
//   MCP_TOKEN_2          a valid token of another user
//   MCP_EXPIRED_TOKEN    an expired token
//   MCP_STEPUP_TOKEN     a token that may open a session but not call
//   MCP_STEPUP_TOOL      ... this tool
//   MCP_GOOD_ORIGIN      an Origin the endpoint accepts
//   MCP_BAD_ORIGIN       an Origin it must refuse (default http://evil.example.com)
//   PROBE_TIMEOUT_MS     per request (default 5000)
// TLS: Node's trust store; add a CA with NODE_EXTRA_CA_CERTS=FILE.
//
// Output: one line per check (PASS, FAIL, WARN, SKIP, NOTE), then
//   probe: pass=N fail=N warn=N skip=N note=N
// FAIL is a MUST the endpoint broke, WARN a SHOULD. Exit status 1 on any
// FAIL, 2 on bad usage, else 0. Only Node's standard library is used.

import http from 'node:http';
import https from 'node:https';

const AUTHZ = 'MCP 2025-11-25 Authorization';
const TRANSPORT = 'MCP 2025-11-25 Streamable HTTP';
const VERSION = '2025-11-25';

const target = process.argv[2];
if (!target || process.argv.length > 3) {
  console.error('usage: node probe.mjs URL   (inputs from the environment: see the file\'s head)');
  process.exit(2);
}
let endpoint;
try { endpoint = new URL(target); } catch { console.error(`probe: not a URL: ${target}`); process.exit(2); }
const env = process.env;
const timeoutMs = Number(env.PROBE_TIMEOUT_MS || 5000);
const badOrigin = env.MCP_BAD_ORIGIN || 'http://evil.example.com';

// ---------------------------------------------------------------- report

const report = [];
function note(kind, group, name, source, detail = '') { report.push({ kind, group, name, source, detail }); }
// must records a MUST: FAIL when cond is false. should records a SHOULD: WARN.
const must = (cond, group, name, source, detail) => note(cond ? 'PASS' : 'FAIL', group, name, source, cond ? '' : detail);
const should = (cond, group, name, source, detail) => note(cond ? 'PASS' : 'WARN', group, name, source, cond ? '' : detail);
const skip = (group, name, why) => note('SKIP', group, name, '', why);

// ---------------------------------------------------------------- HTTP

// send makes one request and resolves to {status, headers, type, body, json};
// a failed connection resolves with status 0 and the error in body. With
// stream false the body is not read: the request ends once headers arrive
// (for a GET that opens an event stream). An event-stream body is read up
// to the first JSON-RPC response in it.
function send(method, url, { token, headers = {}, message, stream = true } = {}) {
  const u = new URL(url);
  const h = { ...headers };
  if (token) h.authorization = `Bearer ${token}`;
  let payload;
  if (message !== undefined) {
    payload = Buffer.from(JSON.stringify(message));
    h['content-type'] = 'application/json';
    h.accept ??= 'application/json, text/event-stream';
    h['content-length'] = payload.length;
  }
  const lib = u.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let done = false;
    const finish = (r) => { if (!done) { done = true; clearTimeout(timer); resolve(r); } };
    const req = lib.request(u, { method, headers: h, agent: false }, (res) => {
      const type = String(res.headers['content-type'] || '');
      const base = { status: res.statusCode, headers: res.headers, type };
      if (!stream) { finish({ ...base, body: '', json: null }); res.destroy(); return; }
      res.setEncoding('utf8');
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
        if (type.startsWith('text/event-stream')) {
          const data = firstResponseEvent(body);
          if (data !== null) { finish({ ...base, body: data, json: parseJSON(data) }); res.destroy(); }
        }
      });
      res.on('end', () => finish({ ...base, body, json: parseJSON(type.startsWith('text/event-stream') ? firstResponseEvent(body) : body) }));
      res.on('error', () => finish({ ...base, body, json: null }));
    });
    const timer = setTimeout(() => { req.destroy(new Error(`no answer in ${timeoutMs} ms`)); }, timeoutMs);
    req.on('error', (err) => finish({ status: 0, headers: {}, type: '', body: String(err.message || err), json: null }));
    req.end(payload);
  });
}

// firstResponseEvent returns the data of the first complete SSE event that
// holds a JSON-RPC response (an id and a result or error), or null.
function firstResponseEvent(text) {
  const events = text.split(/\r?\n\r?\n/);
  events.pop(); // the last piece may be incomplete
  for (const ev of events) {
    const data = ev.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
    const msg = parseJSON(data);
    if (msg && msg.id !== undefined && ('result' in msg || 'error' in msg)) return data;
  }
  return null;
}

function parseJSON(text) {
  if (text === null || text === undefined || text === '') return null;
  try { return JSON.parse(text); } catch { return null; }
}

// bearer parses a WWW-Authenticate value holding one Bearer challenge into
// its lower-cased parameter names and unquoted values (RFC 9110 §11.6.1).
// It returns null when there is no header and {scheme} of another scheme.
function bearer(value) {
  if (!value) return null;
  const m = /^\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)(.*)$/s.exec(value);
  if (!m) return { scheme: '', params: {} };
  const params = {};
  const param = /\s*,?\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/gy;
  let p;
  while ((p = param.exec(m[2])) !== null) {
    params[p[1].toLowerCase()] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : p[3];
  }
  return { scheme: m[1], params };
}

const challengeOf = (r) => bearer(r.headers['www-authenticate']);

// ---------------------------------------------------------------- messages

const initialize = (id) => ({
  jsonrpc: '2.0', id, method: 'initialize',
  params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'mcpgate-probe', version: '1' } },
});
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const listTools = (id) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });
const callTool = (id, name) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

// openSession initializes with token and sends notifications/initialized;
// it resolves to {init, headers} where headers carry the session id and
// the negotiated version, or to {init} when initialize did not succeed.
async function openSession(token) {
  const init = await send('POST', endpoint, { token, message: initialize(1) });
  if (init.status !== 200 || !init.json?.result) return { init };
  const sid = init.headers['mcp-session-id'];
  const headers = { 'mcp-protocol-version': init.json.result.protocolVersion || VERSION };
  if (sid) headers['mcp-session-id'] = sid;
  const notified = await send('POST', endpoint, { token, headers, message: initialized });
  return { init, sid, headers, notified };
}

// ---------------------------------------------------------------- checks

// checkChallenge: what a request without a token gets. Resolves to whether
// the endpoint answered at all, whether it wants tokens, and the metadata
// URL its challenge names.
async function checkChallenge() {
  const r = await send('POST', endpoint, { message: initialize(1) });
  if (r.status === 0) {
    must(false, 'challenge', 'the endpoint answers HTTP', '', r.body);
    return { reachable: false };
  }
  if (r.status !== 401) {
    if (env.MCP_TOKEN) must(false, 'challenge', `POST without a token: 401 (got ${r.status})`, `${AUTHZ}, Token Handling`, 'MCP_TOKEN is set, so the endpoint should want one');
    else note('NOTE', 'challenge', `POST without a token: ${r.status}; the endpoint takes no token, token checks skipped`, '');
    return { reachable: true, protected: false, metadataURL: null };
  }
  must(true, 'challenge', 'POST without a token: 401', `${AUTHZ}, Error Handling`);
  const ch = challengeOf(r);
  must(ch?.scheme.toLowerCase() === 'bearer', 'challenge', 'the 401 carries a Bearer challenge', 'RFC 6750 §3', r.headers['www-authenticate'] || 'no WWW-Authenticate');
  const metadataURL = ch?.params.resource_metadata || null;
  should(!!metadataURL, 'challenge', 'the challenge names resource_metadata', `${AUTHZ}, Protected Resource Metadata Discovery`, 'no resource_metadata parameter');
  should(!!ch?.params.scope, 'challenge', 'the challenge names the scope to ask for', `${AUTHZ}, Protected Resource Metadata Discovery`, 'no scope parameter');
  should(!ch?.params.error, 'challenge', 'no error code when the request carried no credentials', 'RFC 6750 §3.1', `error=${ch?.params.error}`);
  for (const method of ['GET', 'DELETE']) {
    const g = await send(method, endpoint, { headers: { accept: 'text/event-stream', 'mcp-session-id': 'probe-no-token' }, stream: false });
    must(g.status === 401, 'challenge', `${method} without a token: 401 (got ${g.status})`, `${AUTHZ}, Token Requirements`);
  }
  return { reachable: true, protected: true, metadataURL };
}

// wellKnown returns the RFC 9728 §3.1 metadata URLs of the endpoint: the
// path-inserted one and the origin's root one.
function wellKnown(u) {
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/$/, '');
  const root = `${u.origin}/.well-known/oauth-protected-resource`;
  return { pathInserted: `${root}${path}${u.search}`, root };
}

async function checkMetadata(metadataURL) {
  const known = wellKnown(endpoint);
  const places = [['challenge URL', metadataURL], ['path-inserted URL', known.pathInserted], ['root URL', known.root]];
  let served = 0;
  for (const [where, url] of places) {
    if (!url) continue;
    const r = await send('GET', url, { headers: { origin: 'http://client.example' } });
    const doc = r.status === 200 && r.json && typeof r.json === 'object' ? r.json : null;
    if (doc) served++;
    const fetched = `metadata at the ${where} ${url}: 200 JSON (got ${r.status})`;
    if (where === 'root URL') { if (!doc) note('NOTE', 'metadata', fetched, 'RFC 9728 §3.1'); }
    else if (where === 'challenge URL') must(!!doc, 'metadata', fetched, 'RFC 9728 §3.2');
    else should(!!doc, 'metadata', fetched, `RFC 9728 §3.1; ${AUTHZ} (clients try it first)`);
    if (!doc) continue;
    if (where === 'root URL') note('NOTE', 'metadata', `root metadata served for resource ${doc.resource}`, 'RFC 9728 §3.1');
    else must(doc.resource === endpoint.href || doc.resource === target, 'metadata', `metadata (${where}) names the endpoint's URL as resource`, 'RFC 9728 §3.3', `resource=${doc.resource}`);
    must(Array.isArray(doc.authorization_servers) && doc.authorization_servers.length > 0, 'metadata', `metadata (${where}) lists authorization_servers`, `${AUTHZ}, Authorization Server Location`, JSON.stringify(doc.authorization_servers));
    should(Array.isArray(doc.scopes_supported) && doc.scopes_supported.length > 0, 'metadata', `metadata (${where}) lists scopes_supported`, `${AUTHZ}, Scope Selection Strategy`, JSON.stringify(doc.scopes_supported));
    should(!!r.headers['access-control-allow-origin'], 'metadata', `metadata (${where}) allows browser clients (Access-Control-Allow-Origin)`, 'RFC 9728 §3', 'no Access-Control-Allow-Origin');
  }
  must(served > 0, 'metadata', 'the metadata is found at the challenge URL or a well-known URL', `${AUTHZ}, Protected Resource Metadata Discovery`, 'none served');
}

async function checkRefused(group, name, token, source) {
  const r = await send('POST', endpoint, { token, message: initialize(1) });
  must(r.status === 401, group, `${name}: 401 (got ${r.status})`, source);
  if (r.status === 401) should(challengeOf(r)?.params.error === 'invalid_token', group, `${name}: error="invalid_token"`, 'RFC 6750 §3.1', r.headers['www-authenticate'] || 'no WWW-Authenticate');
}

// checkInsufficient checks a 403 step-up challenge.
function checkInsufficient(r, where) {
  const source = `${AUTHZ}, Runtime Insufficient Scope Errors`;
  should(r.status === 403, 'tokens', `${where}: 403 (got ${r.status})`, source);
  if (r.status !== 403) return;
  const ch = challengeOf(r);
  should(ch?.params.error === 'insufficient_scope', 'tokens', `${where}: error="insufficient_scope"`, source, r.headers['www-authenticate'] || 'no WWW-Authenticate');
  should(!!ch?.params.scope, 'tokens', `${where}: the challenge names the scope needed`, source, 'no scope parameter');
  should(!!ch?.params.resource_metadata, 'tokens', `${where}: the challenge names resource_metadata`, source, 'no resource_metadata parameter');
}

async function checkTokens() {
  await checkRefused('tokens', 'a token the issuer never wrote', `probe-${Math.random().toString(36).slice(2)}`, `${AUTHZ}, Token Handling`);
  if (env.MCP_EXPIRED_TOKEN) await checkRefused('tokens', 'an expired token', env.MCP_EXPIRED_TOKEN, `${AUTHZ}, Token Handling`);
  else skip('tokens', 'an expired token', 'MCP_EXPIRED_TOKEN not set');
  if (env.MCP_WRONG_AUD_TOKEN) await checkRefused('tokens', 'a token for another resource', env.MCP_WRONG_AUD_TOKEN, `${AUTHZ}, Token Handling; RFC 8707`);
  else skip('tokens', 'a token for another resource', 'MCP_WRONG_AUD_TOKEN not set');
  if (env.MCP_TOKEN) {
    const u = new URL(endpoint);
    u.searchParams.set('access_token', env.MCP_TOKEN);
    const r = await send('POST', u, { message: initialize(1) });
    must(r.status === 401, 'tokens', `a token in the query string only: refused, 401 (got ${r.status})`, `${AUTHZ}, Token Requirements`);
  } else skip('tokens', 'a token in the query string', 'MCP_TOKEN not set');
  if (env.MCP_LOW_SCOPE_TOKEN) {
    const r = await send('POST', endpoint, { token: env.MCP_LOW_SCOPE_TOKEN, message: initialize(1) });
    checkInsufficient(r, 'initialize with a token lacking a required scope');
  } else skip('tokens', 'a token lacking a required scope', 'MCP_LOW_SCOPE_TOKEN not set');
  if (env.MCP_STEPUP_TOKEN && env.MCP_STEPUP_TOOL) {
    const s = await openSession(env.MCP_STEPUP_TOKEN);
    if (!s.headers) must(false, 'tokens', `a session for the step-up token (initialize got ${s.init.status})`, TRANSPORT, s.init.body.slice(0, 200));
    else {
      const r = await send('POST', endpoint, { token: env.MCP_STEPUP_TOKEN, headers: s.headers, message: callTool(2, env.MCP_STEPUP_TOOL) });
      checkInsufficient(r, `tools/call ${env.MCP_STEPUP_TOOL} beyond the token's scope`);
    }
  } else skip('tokens', 'step-up on a live session', 'MCP_STEPUP_TOKEN and MCP_STEPUP_TOOL not set');
}

async function checkTransport(isProtected) {
  const token = env.MCP_TOKEN;
  if (isProtected && !token) { skip('transport', 'every transport check', 'MCP_TOKEN not set'); return; }
  const s = await openSession(token);
  if (!s.headers) {
    must(false, 'transport', `initialize: 200 with a result (got ${s.init.status})`, `${TRANSPORT}, Sending Messages`, s.init.body.slice(0, 200));
    return;
  }
  must(true, 'transport', `initialize: 200 (${s.init.type.split(';')[0]}), version ${s.headers['mcp-protocol-version']}`, `${TRANSPORT}, Sending Messages`);
  if (s.sid) must(/^[\x21-\x7E]+$/.test(s.sid), 'transport', 'the session id is visible ASCII only', `${TRANSPORT}, Session Management`, `length ${s.sid.length}`);
  else note('NOTE', 'transport', 'no session id issued (a stateless server)', `${TRANSPORT}, Session Management`);
  must(s.notified.status === 202, 'transport', `a notification: 202 Accepted (got ${s.notified.status})`, `${TRANSPORT}, Sending Messages`);
  const ok = await send('POST', endpoint, { token, headers: s.headers, message: listTools(3) });
  must(ok.status === 200 && !!ok.json?.result, 'transport', `tools/list on the session: 200 with a result (got ${ok.status})`, TRANSPORT, ok.body.slice(0, 200));
  const version = s.headers['mcp-protocol-version'];
  if (s.sid) {
    const none = await send('POST', endpoint, { token, headers: { 'mcp-protocol-version': version }, message: listTools(4) });
    should(none.status === 400, 'transport', `a request without the session id: 400 (got ${none.status})`, `${TRANSPORT}, Session Management`);
    const unknown = await send('POST', endpoint, { token, headers: { ...s.headers, 'mcp-session-id': 'probe-unknown-session' }, message: listTools(5) });
    must(unknown.status === 404, 'transport', `an unknown session id: 404 (got ${unknown.status})`, `${TRANSPORT}, Session Management`);
    if (isProtected) {
      const bare = await send('POST', endpoint, { headers: s.headers, message: listTools(6) });
      must(bare.status === 401, 'transport', `the session without a token: 401 (got ${bare.status})`, 'MCP Security Best Practices, Session Hijacking');
      if (env.MCP_TOKEN_2) {
        const other = await send('POST', endpoint, { token: env.MCP_TOKEN_2, headers: s.headers, message: listTools(7) });
        should(other.status >= 400 && other.status < 500, 'transport', `the session with another user's token: refused (got ${other.status})`, 'MCP Security Best Practices, Session Hijacking');
      } else skip('transport', "the session with another user's token", 'MCP_TOKEN_2 not set');
    }
  }
  const future = await send('POST', endpoint, { token, headers: { ...s.headers, 'mcp-protocol-version': '1999-01-01' }, message: listTools(8) });
  must(future.status === 400, 'transport', `an unsupported MCP-Protocol-Version: 400 (got ${future.status})`, `${TRANSPORT}, Protocol Version Header`);
  const older = await send('POST', endpoint, { token, headers: { ...s.headers, 'mcp-protocol-version': '2025-03-26' }, message: listTools(9) });
  should(older.status === 200, 'transport', `MCP-Protocol-Version 2025-03-26, an older supported one: 200 (got ${older.status})`, `${TRANSPORT}, Protocol Version Header`);
  const evilPost = await send('POST', endpoint, { token, headers: { ...s.headers, origin: badOrigin }, message: listTools(10) });
  must(evilPost.status === 403, 'transport', `POST with Origin ${badOrigin}: 403 (got ${evilPost.status})`, `${TRANSPORT}, Security Warning`);
  const evilGet = await send('GET', endpoint, { token, headers: { ...s.headers, accept: 'text/event-stream', origin: badOrigin }, stream: false });
  must(evilGet.status === 403, 'transport', `GET with Origin ${badOrigin}: 403 (got ${evilGet.status})`, `${TRANSPORT}, Security Warning`);
  if (env.MCP_GOOD_ORIGIN) {
    const good = await send('POST', endpoint, { token, headers: { ...s.headers, origin: env.MCP_GOOD_ORIGIN }, message: listTools(11) });
    must(good.status === 200, 'transport', `POST with Origin ${env.MCP_GOOD_ORIGIN}: 200 (got ${good.status})`, TRANSPORT);
  } else skip('transport', 'an allowed Origin', 'MCP_GOOD_ORIGIN not set');
  const get = await send('GET', endpoint, { token, headers: { ...s.headers, accept: 'text/event-stream' }, stream: false });
  must((get.status === 200 && get.type.startsWith('text/event-stream')) || get.status === 405, 'transport',
    `GET: an event stream or 405 (got ${get.status} ${get.type})`, `${TRANSPORT}, Listening for Messages from the Server`);
  if (!s.sid) return;
  const del = await send('DELETE', endpoint, { token, headers: s.headers });
  const ended = del.status >= 200 && del.status < 300;
  must(ended || del.status === 405, 'transport', `DELETE: 2xx or 405 (got ${del.status})`, `${TRANSPORT}, Session Management`);
  if (ended) {
    const after = await send('POST', endpoint, { token, headers: s.headers, message: listTools(12) });
    must(after.status === 404, 'transport', `the session after DELETE: 404 (got ${after.status})`, `${TRANSPORT}, Session Management`);
  }
}

// ---------------------------------------------------------------- main

console.log(`probe: ${endpoint.href}`);
try {
  const { reachable, protected: isProtected, metadataURL } = await checkChallenge();
  if (reachable) {
    if (isProtected || metadataURL) await checkMetadata(metadataURL);
    if (isProtected) await checkTokens();
    await checkTransport(isProtected);
  }
} catch (err) {
  note('FAIL', 'probe', 'the probe itself failed', '', String(err?.stack || err));
}
const count = (kind) => report.filter((r) => r.kind === kind).length;
for (const r of report) {
  console.log(`${r.kind.padEnd(4)}  ${r.group.padEnd(9)}  ${r.name}${r.source ? `  [${r.source}]` : ''}`);
  if (r.detail) console.log(`      ${r.detail}`);
}
console.log(`probe: pass=${count('PASS')} fail=${count('FAIL')} warn=${count('WARN')} skip=${count('SKIP')} note=${count('NOTE')}`);
process.exit(count('FAIL') > 0 ? 1 : 0);
