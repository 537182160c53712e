#!/usr/bin/env bash
# client.sh: client scenarios of the official MCP conformance suite against
# mcpgate's client side (`make conformance`): the suite starts its own
# authorization server and MCP server for each scenario and runs the client
# under test (scripts/conformance/dpop-client.sh: mcpgate login, then an MCP
# session through mcpgate bridge) against them. One line per scenario.
#
# Usage: client.sh [SCENARIO...]   default: auth/dpop auth/dpop-nonce
# Env:   MCPGATE_BIN          the binary (default bin/mcpgate; make builds it)
#        CONFORMANCE_VERSION  the suite (default 0.2.0-alpha.12, the first
#                             with the DPoP scenarios; installed by
#                             suite.sh --install, as .ci/run does)
#        CONFORMANCE_HOME     as for suite.sh
# Exit:  0 when every scenario passed, 1 when one failed, 2 when the suite
#        could not run.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VERSION="${CONFORMANCE_VERSION:-0.2.0-alpha.12}"
export MCPGATE_BIN="${MCPGATE_BIN:-$ROOT/bin/mcpgate}"
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(auth/dpop auth/dpop-nonce)

die() { echo "conformance client: $*" >&2; exit 2; }
command -v node >/dev/null || die "needs Node.js"
command -v curl >/dev/null || die "needs curl (the client's stand-in browser)"
[ -x "$MCPGATE_BIN" ] || die "$MCPGATE_BIN is missing; run make build (make conformance does)"
HOME_DIR="${CONFORMANCE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpgate-conformance/$VERSION}"
ENTRY="$HOME_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -f "$ENTRY" ] || CONFORMANCE_VERSION="$VERSION" "$HERE/suite.sh" --install || die "installing the suite $VERSION failed"
NODE=(node)
node -e 'process.exit(typeof require("fs").globSync === "function" ? 0 : 1)' || NODE=(node --import "$HERE/node20.mjs")

OUT="$HOME_DIR/results/client-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT" || die "cannot make $OUT"
echo "conformance $("${NODE[@]}" "$ENTRY" --version) client scenarios | client: $HERE/dpop-client.sh ($MCPGATE_BIN) | results=$OUT"
pass=0 fail=0
for s in "${SCENARIOS[@]}"; do
  log="$OUT/$(echo "$s" | tr / -).log"
  (cd "$OUT" && "${NODE[@]}" "$ENTRY" client --command "$HERE/dpop-client.sh" --scenario "$s" -o "$OUT") >"$log" 2>&1
  rc=$?
  checks="$(grep -Eo 'Passed: [0-9]+/[0-9]+, [0-9]+ failed' "$log" | tail -1)"
  if [ "$rc" -eq 0 ] && grep -q 'OVERALL: PASSED' "$log"; then
    pass=$((pass + 1)); echo "PASS  $s  ($checks)"
  else
    fail=$((fail + 1)); echo "FAIL  $s  ($checks; log: $log)"
    grep -E 'FAILURE' "$log" | sed 's/\x1b\[[0-9;]*m//g; s/^/      /' | head -10
  fi
done
echo "client scenarios passed: $pass, failed: $fail"
[ "$fail" -eq 0 ]
