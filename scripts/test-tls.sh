#!/usr/bin/env bash
# make test-tls: the network-facing gateway end to end over real HTTPS.
#
# Makes a development certificate if certs/ has none (mcpgate certs), starts a
# throwaway OIDC issuer (mcpgate-testissuer) that writes test tokens, starts
# `mcpgate serve` with TLS and auth against it, and drives it with curl:
# handshake, RFC 9728 metadata, the 401 challenge, initialize with a token, a
# routed tool call, a read-only token's tool list, the unknown-session 404,
# another user's token on the session, the SSE GET, DELETE, and plain HTTP
# refused. Then the resource-server probe (scripts/conformance/probe.mjs, on
# Node.js) must report no FAIL and no WARN.
#
# Prints one line per check and "N passed, N failed"; exits non-zero on any
# failure. Needs bin/mcpgate and bin/mcpgate-testissuer (make build).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BIN="$ROOT/bin"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT

pass=0 fail=0
ok()  { pass=$((pass + 1)); printf 'PASS  %s\n' "$1"; }
bad() { fail=$((fail + 1)); printf 'FAIL  %s\n' "$1"; [ -n "${2:-}" ] && printf '      %s\n' "$2"; }
check() { # check NAME CONDITION-COMMAND...
  local name="$1"; shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}

free_port() { # a random high port nobody listens on (bash's /dev/tcp probe)
  local p
  while :; do
    # Below the kernel's ephemeral range (net.ipv4.ip_local_port_range,
    # 32768 and up by default): no outgoing connection can take the port
    # between this probe and the listener's bind.
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
wait_for() { # wait_for FILE PATTERN SECONDS
  local i
  for ((i = 0; i < $3 * 10; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# 1. A certificate: the repo's development one, or a fresh one.
if [ ! -f certs/cert.pem ] || [ ! -f certs/key.pem ]; then
  "$BIN/mcpgate" certs --dir certs >/dev/null || { echo "mcpgate certs failed" >&2; exit 1; }
fi
CERT="$ROOT/certs/cert.pem" KEY="$ROOT/certs/key.pem"

# 2. The issuer, with tokens for the gateway's resource.
IPORT=$(free_port) GPORT=$(free_port)
ISSUER="https://127.0.0.1:$IPORT"
GW="https://127.0.0.1:$GPORT"
RESOURCE="$GW/mcp"
"$BIN/mcpgate-testissuer" --listen "127.0.0.1:$IPORT" --cert "$CERT" --key "$KEY" \
  --audience "$RESOURCE" --tokens-dir "$WORK/tokens" >"$WORK/issuer.log" 2>&1 &
PIDS+=($!)
wait_for "$WORK/issuer.log" '^ready' 20 || { cat "$WORK/issuer.log"; echo "the test issuer did not start" >&2; exit 1; }
FULL=$(cat "$WORK/tokens/full.jwt") RO=$(cat "$WORK/tokens/readonly.jwt")
LOW=$(cat "$WORK/tokens/low.jwt") WRONG=$(cat "$WORK/tokens/wrongaud.jwt")
USER2=$(cat "$WORK/tokens/user2.jwt") EXPIRED=$(cat "$WORK/tokens/expired.jwt")

# 3. The gateway: TLS, auth, the built-in worker on a scratch SQLite file.
cat >"$WORK/gateway.yaml" <<YAML
server:
  listen: 127.0.0.1:$GPORT
  public_url: $GW
  title: mcpgate TLS test
auth:
  issuer: $ISSUER
  issuer_ca_file: $CERT
  required_scopes: [mcp:use]
  write_scope: mcp:write
  extra_scopes: [profile, offline_access]
  user_claim: preferred_username
tls:
  cert_file: $CERT
  key_file: $KEY
database:
  path: $WORK/data/mcpgate.db
metrics:
  listen: "off" # not the shared default port: other gateways may run on this machine
YAML
"$BIN/mcpgate" serve --config "$WORK/gateway.yaml" >"$WORK/gateway.log" 2>&1 &
PIDS+=($!)
wait_for "$WORK/gateway.log" 'msg="mcpgate: serving" ' 20 || { cat "$WORK/gateway.log"; echo "the gateway did not start" >&2; exit 1; }

# curl helpers: -D dumps headers, body to a file; prints the status code.
CURL=(curl -sS --max-time 10 --cacert "$CERT")
H_JSON=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25')
req() { # req NAME METHOD TOKEN SESSION BODY -> status; headers in $WORK/NAME.h, body in $WORK/NAME.b
  local name=$1 method=$2 token=$3 session=$4 body=$5 args=()
  [ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
  [ -n "$session" ] && args+=(-H "MCP-Session-Id: $session")
  [ -n "$body" ] && args+=("${H_JSON[@]}" --data-binary "$body")
  "${CURL[@]}" -X "$method" -D "$WORK/$name.h" -o "$WORK/$name.b" -w '%{http_code}' "${args[@]}" "$RESOURCE"
}
header() { grep -i "^$2:" "$WORK/$1.h" | head -1 | cut -d: -f2- | tr -d '\r' | sed 's/^ //'; }
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test-tls","version":"1"}}}'
INITED='{"jsonrpc":"2.0","method":"notifications/initialized"}'

# Handshake and metadata.
code=$("${CURL[@]}" -o "$WORK/prm.json" -w '%{http_code}' "$GW/.well-known/oauth-protected-resource/mcp")
check "TLS handshake and RFC 9728 metadata (200)" [ "$code" = 200 ]
PRM=$(tr -d ' \n\t' <"$WORK/prm.json")
has() { [[ "$1" == *"$2"* ]]; }
check "metadata names the resource exactly" has "$PRM" "\"resource\":\"$RESOURCE\""
check "metadata advertises the derived scopes" has "$PRM" '"scopes_supported":["mcp:use","mcp:write","profile","offline_access"]'
code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$GW/.well-known/oauth-protected-resource")
check "root well-known metadata (200)" [ "$code" = 200 ]
proto=$("${CURL[@]}" --tlsv1.1 --tls-max 1.1 -o /dev/null -w '%{http_code}' "$GW/.well-known/oauth-protected-resource" 2>/dev/null)
check "TLS 1.1 refused" [ "$proto" = 000 ]

# Challenges.
code=$(req noauth POST "" "" "$INIT")
www=$(header noauth WWW-Authenticate)
check "no token: 401" [ "$code" = 401 ]
check "no token: challenge names resource_metadata and scope" \
  bash -c "[[ '$www' == *'resource_metadata=\"$GW/.well-known/oauth-protected-resource/mcp\"'* && '$www' == *'scope=\"mcp:use mcp:write profile offline_access\"'* ]]"
code=$(req expired POST "$EXPIRED" "" "$INIT")
check "expired token: 401 invalid_token" bash -c "[ $code = 401 ] && grep -qi 'error=\"invalid_token\"' '$WORK/expired.h'"
code=$(req wrongaud POST "$WRONG" "" "$INIT")
check "wrong audience: 401 invalid_token" bash -c "[ $code = 401 ] && grep -qi 'error=\"invalid_token\"' '$WORK/wrongaud.h'"
code=$(req low POST "$LOW" "" "$INIT")
check "missing required scope: 403 insufficient_scope" bash -c "[ $code = 403 ] && grep -qi 'error=\"insufficient_scope\"' '$WORK/low.h'"
code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "${H_JSON[@]}" --data-binary "$INIT" "$RESOURCE?access_token=$FULL")
check "token in the query string refused (401)" [ "$code" = 401 ]

# A read-write session.
code=$(req init POST "$FULL" "" "$INIT")
SID=$(header init MCP-Session-Id)
check "initialize with a token: 200 and a session id" bash -c "[ $code = 200 ] && [ ${#SID} -ge 32 ]"
code=$(req inited POST "$FULL" "$SID" "$INITED")
check "notifications/initialized: 202" [ "$code" = 202 ]
code=$(req status POST "$FULL" "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}')
check "routed tool call (status) answers as the token's user" bash -c "[ $code = 200 ] && grep -q 'alice' '$WORK/status.b' && ! grep -q '\"isError\":true' '$WORK/status.b'"
code=$(req list POST "$FULL" "$SID" '{"jsonrpc":"2.0","id":3,"method":"tools/list"}')
check "read-write session lists gated tools (execute_sql)" bash -c "[ $code = 200 ] && grep -q '\"execute_sql\"' '$WORK/list.b'"
code=$(req other POST "$USER2" "$SID" '{"jsonrpc":"2.0","id":4,"method":"tools/list"}')
check "another user's token on the session: 404" [ "$code" = 404 ]
code=$(req unknown POST "$FULL" "00000000000000000000000000000000" '{"jsonrpc":"2.0","id":5,"method":"tools/list"}')
check "unknown session: 404" [ "$code" = 404 ]

# The standalone SSE stream: headers arrive, then curl's time limit ends it.
"${CURL[@]}" --max-time 2 -D "$WORK/sse.h" -o /dev/null -H "Authorization: Bearer $FULL" -H "MCP-Session-Id: $SID" \
  -H 'Accept: text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25' "$RESOURCE" 2>/dev/null
check "GET opens the SSE stream (200 text/event-stream)" bash -c "head -1 '$WORK/sse.h' | grep -q ' 200' && grep -qi '^content-type: text/event-stream' '$WORK/sse.h'"

# A read-only token gets a worker without gated tools.
code=$(req roinit POST "$RO" "" "$INIT")
ROSID=$(header roinit MCP-Session-Id)
req roinited POST "$RO" "$ROSID" "$INITED" >/dev/null
code=$(req rolist POST "$RO" "$ROSID" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
check "read-only token: tools/list has query but no execute_sql or commit" \
  bash -c "[ $code = 200 ] && grep -q '\"query\"' '$WORK/rolist.b' && ! grep -q '\"execute_sql\"' '$WORK/rolist.b' && ! grep -q '\"commit\"' '$WORK/rolist.b'"
code=$(req rocall POST "$RO" "$ROSID" '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_sql","arguments":{"sql":"DELETE FROM customers"}}}')
# A gated call is a step-up: 403 insufficient_scope naming the write scope
# (docs/gateway.md, "Step-up, in place"), so the client can ask for it and
# carry on on the same session.
check "read-only token: execute_sql gets 403 insufficient_scope naming mcp:write" \
  bash -c "[ $code = 403 ] && grep -qi 'error=\"insufficient_scope\"' '$WORK/rocall.h' && grep -qi 'scope=\"[^\"]*mcp:write' '$WORK/rocall.h'"

# DELETE ends the session; it is gone afterwards.
code=$(req delete DELETE "$FULL" "$SID" "")
check "DELETE: 200" [ "$code" = 200 ]
code=$(req after POST "$FULL" "$SID" '{"jsonrpc":"2.0","id":6,"method":"tools/list"}')
check "after DELETE: 404" [ "$code" = 404 ]

# Plain HTTP on the TLS port is refused, never served.
plain=$(curl -sS --max-time 5 -o "$WORK/plain.b" -w '%{http_code}' "${H_JSON[@]}" -H "Authorization: Bearer $FULL" \
  --data-binary "$INIT" "http://127.0.0.1:$GPORT/mcp" 2>/dev/null)
check "plain HTTP to the TLS port refused (400, no session)" \
  bash -c "[ '$plain' = 400 ] && ! grep -q 'jsonrpc' '$WORK/plain.b'"

# Nothing secret in the gateway's log.
check "the gateway log holds no token" bash -c "! grep -qF '${FULL:0:40}' '$WORK/gateway.log'"

# The resource-server probe, against the same gateway, with every input it
# takes: the issuer's env.sh, then the expired token, the read-only token
# and a gated tool for the step-up, and the gateway's own origin.
PROBE="$ROOT/scripts/conformance/probe.mjs"
if command -v node >/dev/null; then
  (set -a; . "$WORK/tokens/env.sh"; set +a
   MCP_EXPIRED_TOKEN="$EXPIRED" MCP_STEPUP_TOKEN="$RO" MCP_STEPUP_TOOL=execute_sql MCP_GOOD_ORIGIN="$GW" \
   NODE_EXTRA_CA_CERTS="$CERT" node "$PROBE" "$RESOURCE") >"$WORK/probe.log" 2>&1
  rc=$?
  summary=$(grep '^probe: pass=' "$WORK/probe.log")
  if [ $rc = 0 ] && [[ "$summary" == *"fail=0 warn=0 skip=0"* ]]; then ok "probe.mjs: ${summary#probe: }"
  else bad "probe.mjs: ${summary:-exit $rc}" "$(grep -E '^(FAIL|WARN|SKIP)' -A1 "$WORK/probe.log" | head -20)"; fi
else
  bad "probe.mjs: needs Node.js (.ci/run installs it)"
fi

if [ $fail -gt 0 ]; then
  echo "--- gateway log (tail)"; tail -30 "$WORK/gateway.log"
fi
echo
echo "test-tls: $pass passed, $fail failed"
[ $fail = 0 ]
