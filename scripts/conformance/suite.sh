#!/usr/bin/env bash
# suite.sh: the server scenarios of the official MCP conformance suite
# (@modelcontextprotocol/conformance, from npm, at a pinned version) against
# a Streamable HTTP endpoint; one line per scenario, then a summary.
#
# Usage: suite.sh --install            install every pinned version, then exit
#        suite.sh URL [SUITE-ARGS...]  run the suite against URL, e.g.
#          suite.sh http://127.0.0.1:8000/mcp --scenario tools-call-sampling
#          CONFORMANCE_VERSION=0.2.0-alpha.12 suite.sh URL --requirements 2026-07-28
#          CONFORMANCE_VERSION=0.2.0-alpha.12 suite.sh URL --spec-version 2025-11-25
# Env:   CONFORMANCE_VERSION  one of PINNED below (default the first): 0.1.16 has
#                             the scenarios up to revision 2025-11-25;
#                             0.2.0-alpha.12 adds 2026-07-28 and extension ones
#        CONFORMANCE_HOME     where versions are installed
#                             (default ~/.cache/mcpgate-conformance/VERSION)
#        SUITE                active, all or pending (default all; not passed
#                             with --requirements, which picks its own set)
#        OUT                  the results folder (default a dated one under
#                             the install)
#        EXPECTED_FAIL        a file of scenarios expected to fail, counted
#                             apart (summary.mjs; the combined endpoint's list)
# Scenarios the suite tags [extension] (tasks-*) print as EXT lines and are
# counted apart: they never fail the run.
# Exit:  0 when no other scenario has a failed check (warnings pass); 1 when
#        one has; 2 when the suite could not run.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PINNED=(0.1.16 0.2.0-alpha.12)

die() { echo "suite: $*" >&2; exit 2; }
command -v node >/dev/null && command -v npm >/dev/null || die "needs Node.js and npm (apt-get install -y nodejs npm)"

home_of() { echo "${CONFORMANCE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpgate-conformance/$1}"; }

# install VERSION: the suite at exactly VERSION into its home, once.
install() {
  local home
  home="$(home_of "$1")"
  [ -f "$home/node_modules/@modelcontextprotocol/conformance/dist/index.js" ] && return 0
  echo "suite: installing @modelcontextprotocol/conformance@$1 into $home" >&2
  mkdir -p "$home" || return 1
  printf '{"private": true, "description": "the MCP conformance suite for mcpgate scripts/conformance/suite.sh"}\n' >"$home/package.json"
  (cd "$home" && npm install --no-audit --no-fund --silent --save-exact "@modelcontextprotocol/conformance@$1")
}

if [ "${1:-}" = --install ]; then
  for v in "${PINNED[@]}"; do install "$v" || die "npm install of the suite $v failed"; done
  exit 0
fi

URL="${1:?usage: suite.sh URL [suite args] | suite.sh --install}"; shift
VERSION="${CONFORMANCE_VERSION:-${PINNED[0]}}"
case " ${PINNED[*]} " in *" $VERSION "*) ;; *) die "CONFORMANCE_VERSION=$VERSION is not pinned here (${PINNED[*]})" ;; esac
install "$VERSION" || die "npm install of the suite $VERSION failed"
HOME_DIR="$(home_of "$VERSION")"
ENTRY="$HOME_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"

# Node.js before 22 has no fs.globSync, which the suite imports.
NODE=(node)
node -e 'process.exit(typeof require("fs").globSync === "function" ? 0 : 1)' || NODE=(node --import "$HERE/node20.mjs")

SUITE_ARGS=(--suite "${SUITE:-all}")
case " $* " in *" --requirements "*) SUITE_ARGS=() ;; esac
OUT="${OUT:-$HOME_DIR/results/$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT" || die "cannot make $OUT"
echo "conformance $("${NODE[@]}" "$ENTRY" --version) | node $(node --version) | url=$URL | results=$OUT"
(cd "$OUT" && "${NODE[@]}" "$ENTRY" server --url "$URL" "${SUITE_ARGS[@]}" --output-dir "$OUT" "$@") >"$OUT/console.log" 2>&1
RC=$?
"${NODE[@]}" "$ENTRY" list >"$OUT/list.txt" 2>/dev/null
node "$HERE/summary.mjs" "$OUT"
SUMMARY=$?
echo "suite exit status: $RC (its log: $OUT/console.log)"
exit $SUMMARY
