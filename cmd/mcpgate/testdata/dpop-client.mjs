// The TypeScript MCP client (@modelcontextprotocol/client) against the
// gateway with DPoP: its OAuth flow (dynamic registration, authorization
// code with PKCE) with a DpopSession, so the token request carries a proof
// and the issuer binds the token to the session's key; then its transport
// presents the token as Authorization: DPoP with a fresh proof per request.
// The authorization redirect is followed by hand (no browser).
//
// Usage: node dpop-client.mjs URL TOOL
// Env:   MCPGATE_TS_CLIENT  the install prefix of @modelcontextprotocol/client
//        NODE_EXTRA_CA_CERTS the gateway's and the issuer's certificates
// Prints one JSON line: the token type, the key thumbprint, the tool's
// result, and the access token (a test issuer's), for the caller to replay.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const prefix = process.env.MCPGATE_TS_CLIENT;
const sdk = await import(pathToFileURL(join(prefix, 'node_modules/@modelcontextprotocol/client/dist/index.mjs')).href);
const { Client, StreamableHTTPClientTransport, DpopSession, UnauthorizedError } = sdk;

const [url, tool] = process.argv.slice(2);
const redirect = 'http://127.0.0.1:9/callback'; // never fetched: the code is read off the Location header
const dpop = await DpopSession.create({ alg: 'ES256' });
let info, tokens, verifier, discovery, callback;
const provider = {
  get redirectUrl() { return redirect; },
  get clientMetadata() {
    return { client_name: 'ts-dpop-test', redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  clientInformation() { return info; },
  saveClientInformation(i) { info = i; },
  tokens() { return tokens; },
  saveTokens(t) { tokens = t; },
  async redirectToAuthorization(u) {
    const r = await fetch(u, { redirect: 'manual' });
    callback = new URL(r.headers.get('location')).searchParams;
    if (!callback.get('code')) throw new Error(`no code in the authorization redirect: ${callback}`);
  },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
  saveDiscoveryState(d) { discovery = d; },
  discoveryState() { return discovery; },
  dpop() { return dpop; },
};

const client = new Client({ name: 'ts-dpop-test', version: '1.0.0' });
let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
try {
  await client.connect(transport);
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  await transport.finishAuth(callback);
  transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  await client.connect(transport);
}
await client.listTools();
const result = await client.callTool({ name: tool, arguments: {} });
await client.close();
console.log(JSON.stringify({ tokenType: tokens?.token_type, thumbprint: dpop.thumbprint, isError: !!result.isError,
  text: result.content?.[0]?.text ?? '', accessToken: tokens?.access_token }));
