#!/usr/bin/env bash
# The official MCP conformance suite, through the gateway (`make conformance`).
#
# Starts bin/mcpgate in its unauthenticated localhost mode on a free loopback
# port, with the go-sdk's conformance "everything-server" (stdio) as the worker
# command, and runs the suite (scripts/conformance/suite.sh) against its /mcp.
# The goal is the result the same fixture gets when served directly (31 pass,
# 1 pass-with-warnings): the gateway must pass sampling, elicitation, progress,
# logging, subscriptions and concurrent streams through intact. With SERVERS=1
# the same worker is one server of a servers list, at /mcp/ev and through the
# combined /mcp.
#
# Usage: scripts/conformance.sh [extra args for suite.sh, e.g. --scenario tools-call-sampling]
#        scripts/conformance.sh --install   install the worker and every pinned
#                                           suite version, then exit (.ci/run
#                                           does, so the runs need no network)
# Env:   MCPGATE_BIN        the gateway binary (default bin/mcpgate; `make conformance` builds it)
#        EVERYTHING_SERVER  the worker (default .bin/everything-server, installed when missing)
#        KEEP_LOG=1         keep the gateway's log even when the suite passes
#        LEGACY_WORKER=1    wrap the worker in worker/internal/legacyworker, so it speaks
#                           only 2025-11-25 and the gateway translates for 2026-07-28 clients
#        CONFORMANCE_VERSION  the suite's version (suite.sh; default 0.1.16)
#        SERVERS=1          serve a servers list instead (ev: the worker above; rm: the
#                           same everything-server over HTTP as a remote server (url),
#                           stateless for --requirements 2026-07-28, with sessions
#                           otherwise; db: the built-in worker on a scratch SQLite file)
#                           and run the suite three times: through /mcp/ev and /mcp/rm,
#                           where it must pass as through /mcp, then through the
#                           combined /mcp, where the scenarios listed in
#                           scripts/conformance/combined-expected.txt are expected to fail
#                           (docs/gateway.md, The combined endpoint, says why) and any
#                           other failure fails the run
# Exit:  the suite's status (0 = no failing scenario); 2 when it could not run.
set -euo pipefail

ROOT="$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || (cd "$(dirname "$0")/.." && pwd))"
cd "$ROOT"
command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"

EVERYTHING_VERSION=v1.8.0 # the go-sdk version go.mod uses
GATEWAY="${MCPGATE_BIN:-$ROOT/bin/mcpgate}"
SUITE="$ROOT/scripts/conformance/suite.sh"
EVERYTHING="${EVERYTHING_SERVER:-$ROOT/.bin/everything-server}"

die() { echo "conformance: $*" >&2; exit 2; }

command -v node >/dev/null && command -v npm >/dev/null || die "the suite needs Node.js and npm (apt-get install -y nodejs npm)"
command -v curl >/dev/null || die "curl is needed to wait for the gateway"
if [ ! -x "$EVERYTHING" ]; then
  echo "conformance: installing everything-server $EVERYTHING_VERSION into $(dirname "$EVERYTHING")"
  mkdir -p "$(dirname "$EVERYTHING")"
  GOBIN="$(cd "$(dirname "$EVERYTHING")" && pwd)" go install "github.com/modelcontextprotocol/go-sdk/conformance/everything-server@$EVERYTHING_VERSION" ||
    die "go install of everything-server failed"
  [ -x "$EVERYTHING" ] || die "go install did not produce $EVERYTHING"
fi
if [ "${1:-}" = --install ]; then
  "$SUITE" --install || die "installing the suite failed"
  exit 0
fi
[ -x "$GATEWAY" ] || die "$GATEWAY is missing; run make build (make conformance does)"

WORKER_CMD="$EVERYTHING"
if [ -n "${LEGACY_WORKER:-}" ]; then
  LEGACY="$(dirname "$EVERYTHING")/legacyworker"
  go build -o "$LEGACY" ./worker/internal/legacyworker || die "go build of legacyworker failed"
  WORKER_CMD="$LEGACY $EVERYTHING"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcpgate-conformance.XXXXXX")"
LOG="$WORK/gateway.log"
GW_PID=""

REMOTE_PID=""
stop_gateway() {
  if [ -n "$GW_PID" ] && kill -0 "$GW_PID" 2>/dev/null; then
    kill -TERM "$GW_PID" 2>/dev/null || true
    # The gateway stops its workers, then exits; give it the worker grace and some.
    for _ in $(seq 1 100); do kill -0 "$GW_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$GW_PID" 2>/dev/null || true
    wait "$GW_PID" 2>/dev/null || true
  fi
  GW_PID=""
}
cleanup() {
  local rc=$?
  stop_gateway
  if [ -n "$REMOTE_PID" ]; then kill "$REMOTE_PID" 2>/dev/null || true; wait "$REMOTE_PID" 2>/dev/null || true; fi
  if [ "$rc" -ne 0 ] || [ -n "${KEEP_LOG:-}" ]; then
    echo "conformance: gateway log kept in $LOG"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port prints a loopback port nobody listens on right now.
free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# start_gateway PORT: starts the gateway and waits until it answers HTTP.
# Returns 1 if it exits first (e.g. the port was taken meanwhile).
start_gateway() {
  local port=$1
  # Metrics off: two runs (and other gateways) would share the default port.
  if [ -n "${SERVERS:-}" ]; then
    MCPGATE_METRICS_LISTEN=off MCPGATE_CONFIG="$WORK/servers.yaml" MCPGATE_DATABASE_PATH="$WORK/db/mcpgate.db" \
      "$GATEWAY" serve --listen "127.0.0.1:$port" >>"$LOG" 2>&1 &
  else
    MCPGATE_METRICS_LISTEN=off "$GATEWAY" serve --listen "127.0.0.1:$port" --worker-command "$WORKER_CMD" >>"$LOG" 2>&1 &
  fi
  GW_PID=$!
  for _ in $(seq 1 300); do
    if ! kill -0 "$GW_PID" 2>/dev/null; then
      wait "$GW_PID" 2>/dev/null || true
      GW_PID=""
      return 1
    fi
    # Any HTTP status means the listener is up (a GET without a session is refused).
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/mcp" || true)"
    if [ -n "$code" ] && [ "$code" != "000" ]; then
      return 0
    fi
    sleep 0.1
  done
  die "the gateway did not answer on 127.0.0.1:$port within 30s (log: $LOG)"
}

if [ -n "${SERVERS:-}" ]; then
  # The conformance worker over stdio, and over HTTP as a remote server, the
  # way docs/upstream.md runs it: with sessions for the 2025 scenarios,
  # stateless for 2026-07-28.
  STATELESS=false
  case " $* " in *" --requirements 2026-07-28 "*) STATELESS=true ;; esac
  RPORT="$(free_port)"
  "$EVERYTHING" -http "127.0.0.1:$RPORT" -stateless="$STATELESS" >>"$WORK/remote.log" 2>&1 &
  REMOTE_PID=$!
  for _ in $(seq 1 300); do
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$RPORT/mcp" || true)"
    [ -n "$code" ] && [ "$code" != "000" ] && break
    kill -0 "$REMOTE_PID" 2>/dev/null || die "the remote everything-server exited at start (log: $WORK/remote.log)"
    sleep 0.1
  done
  # The built-in worker beside them makes /mcp a combined endpoint over
  # servers of all three kinds.
  cat >"$WORK/servers.yaml" <<YAML
servers:
  - name: ev
    command: "$WORKER_CMD"
  - name: rm
    url: http://127.0.0.1:$RPORT/mcp
  - name: db
YAML
fi

PORT=""
for attempt in 1 2 3; do
  p="$(free_port)"
  echo "conformance: starting $GATEWAY on 127.0.0.1:$p (attempt $attempt)" >>"$LOG"
  if start_gateway "$p"; then PORT=$p; break; fi
done
if [ -z "$PORT" ]; then
  tail -n 20 "$LOG" >&2 || true
  die "the gateway exited at start three times"
fi

URL="http://127.0.0.1:$PORT/mcp"
set +e
if [ -n "${SERVERS:-}" ]; then
  echo "conformance: gateway $URL/ev (one server of a servers list), worker $WORKER_CMD"
  "$SUITE" "$URL/ev" "$@"
  RC=$?
  echo "conformance: gateway $URL/rm (a remote server, stateless=$STATELESS), the everything-server over HTTP"
  "$SUITE" "$URL/rm" "$@"
  RC2=$?
  [ "$RC" -ne 0 ] || RC=$RC2
  echo "conformance: gateway $URL (combined over ev, rm and db)"
  EXPECTED_FAIL="$ROOT/scripts/conformance/combined-expected.txt" "$SUITE" "$URL" "$@"
  RC2=$?
  [ "$RC" -ne 0 ] || RC=$RC2
else
  echo "conformance: gateway $URL, worker $WORKER_CMD"
  "$SUITE" "$URL" "$@"
  RC=$?
fi
set -e
if ! kill -0 "$GW_PID" 2>/dev/null; then
  echo "conformance: the gateway died during the suite" >&2
  tail -n 40 "$LOG" >&2 || true
  [ "$RC" -ne 0 ] || RC=1
fi
exit "$RC"
