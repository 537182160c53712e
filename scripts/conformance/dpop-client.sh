#!/usr/bin/env bash
# dpop-client.sh: mcpgate's client side as the client under test of the
# official conformance suite's client scenarios (auth/dpop, auth/dpop-nonce):
# the suite runs it with the URL of its own MCP server as the last argument.
#
# It does what a user does: `mcpgate login` at its defaults (dynamic
# registration, authorization code with PKCE; --dpop auto turns DPoP on from
# the server's DPoP challenge and the authorization server's ES256, and the
# code exchange carries a proof), with a
# "browser" that follows the authorization redirect back to login's loopback
# listener (the suite's authorization server approves at once), then an MCP
# session through `mcpgate bridge` (initialize, initialized, tools/list,
# end of input), which presents the bound token as Authorization: DPoP with
# a fresh proof on every request.
#
# Env: MCPGATE_BIN  the binary (default bin/mcpgate of this checkout)
set -euo pipefail
URL="${!#}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
MCPGATE="${MCPGATE_BIN:-$ROOT/bin/mcpgate}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcpgate-dpop-client.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

cat >"$WORK/browser" <<'SH'
#!/bin/sh
exec curl -sS -L -o /dev/null --max-time 30 "$1"
SH
chmod +x "$WORK/browser"
BROWSER="$WORK/browser" "$MCPGATE" login --url "$URL" --cache "$WORK/tokens.json" --timeout 60s >&2

# The bridge answers each line; the next request waits for the answer
# (the session id comes with initialize's).
coproc BRIDGE { "$MCPGATE" bridge --url "$URL" --cache "$WORK/tokens.json"; }
ask() {
  printf '%s\n' "$1" >&"${BRIDGE[1]}"
  if [ -n "${2:-}" ]; then
    local line
    IFS= read -r -t 30 line <&"${BRIDGE[0]}" || { echo "dpop-client: no answer to $2" >&2; exit 1; }
    echo "$2: $line" >&2
    case "$line" in *'"error"'*) exit 1 ;; esac
  fi
}
ask '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpgate-bridge-conformance","version":"1"}}}' initialize
ask '{"jsonrpc":"2.0","method":"notifications/initialized"}'
ask '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' tools/list
exec {BRIDGE[1]}>&-
wait "$BRIDGE_PID"
