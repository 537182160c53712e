// A TypeScript MCP client against one gateway path with a bearer token:
// connect, list the tools, call some, close. Either generation of the
// TypeScript SDK: "sdk" is @modelcontextprotocol/sdk 1.x (MCP 2025-11-25,
// initialize and a session), "client" is @modelcontextprotocol/client 2.x
// (MCP 2026-07-28 first, in its 'auto' negotiation).
//
// Usage: node ts-calls.mjs sdk|client URL CALLS
//        CALLS is a JSON array of {"name": TOOL, "arguments": {...}}
// Env:   MCPGATE_TS_SDK      the install prefix of @modelcontextprotocol/sdk
//        MCPGATE_TS_CLIENT   the install prefix of @modelcontextprotocol/client
//        MCPGATE_TOKEN       the bearer token
//        NODE_EXTRA_CA_CERTS the gateway's certificate
// Prints one JSON line: the negotiated protocol version, the listed tool
// names, and each call's text and error flag (a call the server refuses
// with a JSON-RPC error gives its message as text and isError true).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [kind, url, calls] = process.argv.slice(2);
const load = (prefix, file) => import(pathToFileURL(join(prefix, 'node_modules/@modelcontextprotocol', file)).href);
let Client, StreamableHTTPClientTransport;
if (kind === 'sdk') {
  ({ Client } = await load(process.env.MCPGATE_TS_SDK, 'sdk/dist/esm/client/index.js'));
  ({ StreamableHTTPClientTransport } = await load(process.env.MCPGATE_TS_SDK, 'sdk/dist/esm/client/streamableHttp.js'));
} else {
  ({ Client, StreamableHTTPClientTransport } = await load(process.env.MCPGATE_TS_CLIENT, 'client/dist/index.mjs'));
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.MCPGATE_TOKEN}` } },
});
// 2.x negotiates only when asked ('legacy', the 2025 sequence, is its
// default): 'auto' probes with server/discover, then falls back.
const options = kind === 'sdk' ? {} : { versionNegotiation: { mode: 'auto' } };
const client = new Client({ name: `ts-${kind}-test`, version: '1.0.0' }, options);
await client.connect(transport);
const version = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion;
const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor);
const results = [];
for (const c of JSON.parse(calls)) {
  try {
    const r = await client.callTool({ name: c.name, arguments: c.arguments ?? {} });
    results.push({ text: r.content?.map((x) => x.text ?? '').join('') ?? '', isError: !!r.isError });
  } catch (e) {
    results.push({ text: String(e.message ?? e), isError: true });
  }
}
await client.close();
console.log(JSON.stringify({ version, sessionId: transport.sessionId ?? '', tools, results }));
