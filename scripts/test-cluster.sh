#!/usr/bin/env bash
# make test-cluster: three mcpgate replicas behind HAProxy, sharing
# PostgreSQL, all on loopback (docs/deploy.md).
#
# Starts PostgreSQL (scripts/with-postgres.sh), the test issuer, three
# replicas (server.replica_id mcpgate-0..2) with TLS and auth, and HAProxy
# with the shipped deploy/haproxy/haproxy.cfg (plus a stats listener for
# the test). Then scripts/clusterdrive drives go-sdk clients of both
# protocol generations through HAProxy: legacy sessions pinned to their
# replica, 2026-07-28 calls spread over all three, transaction handles
# reaching their replica through the mirrored Mcp-Param-Transaction header,
# all of it at /mcp/db, one server of two in a servers list; then the second
# server at /mcp/notes and both through the combined /mcp (sessions pinned,
# calls spread, handles minted through the combined endpoint);
# mcpgate-1 stopped mid-run (its sessions' clients get 404 and open new
# sessions, no other client sees an error), and every acknowledged write
# in PostgreSQL. Then mcpgate-1 starts again and must take new sessions and
# calls (a replica replaced).
#
# Installs haproxy and postgresql from Debian when missing (as root).
# Waits are polls with generous deadlines, never timing asserts: it runs on
# loaded CI machines. Needs bin/mcpgate and bin/mcpgate-testissuer (make
# build). Exits non-zero on any failure.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

install_missing() { # install_missing PACKAGE TEST-COMMAND...
  local pkg=$1; shift
  "$@" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "test-cluster: $pkg is missing; install it (apt-get install $pkg)" >&2
    exit 1
  fi
  echo "test-cluster: installing $pkg" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >/dev/null ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >/dev/null; } ||
    { echo "test-cluster: apt-get install $pkg failed" >&2; exit 1; }
}

if [ -z "${MCPGATE_TEST_POSTGRES_DSN:-}" ]; then
  install_missing haproxy command -v haproxy
  install_missing postgresql sh -c 'ls /usr/lib/postgresql/*/bin/initdb'
  MCPGATE_REQUIRE_POSTGRES=1 exec scripts/with-postgres.sh "$0" "$@"
fi
command -v haproxy >/dev/null || install_missing haproxy command -v haproxy

BIN="$ROOT/bin"
GO=${GO:-go}
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  if [ "${KEEP:-}" = 1 ]; then echo "test-cluster: logs kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

free_port() { # a random high port nobody listens on, not handed out before
  local p
  while :; do
    # Below the kernel's ephemeral range (net.ipv4.ip_local_port_range,
    # 32768 and up by default): no outgoing connection can take the port
    # between this probe and the listener's bind.
    p=$((20000 + RANDOM % 12000))
    [[ " ${USED_PORTS:-} " == *" $p "* ]] && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
    USED_PORTS="${USED_PORTS:-} $p"
    echo "$p"
    return
  done
}
wait_for() { # wait_for FILE PATTERN SECONDS
  local i
  for ((i = 0; i < $3 * 10; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
die() { echo "test-cluster: $1" >&2; [ -n "${2:-}" ] && tail -n 40 "$2" >&2; exit 1; }

[ -x "$BIN/mcpgate" ] && [ -x "$BIN/mcpgate-testissuer" ] || die "run make build first"
"$GO" build -o "$WORK/clusterdrive" ./scripts/clusterdrive || die "building scripts/clusterdrive failed"

# A certificate for the replicas and HAProxy's front end (localhost,
# 127.0.0.1); HAProxy wants the chain and key in one file.
"$BIN/mcpgate" certs --dir "$WORK/certs" >/dev/null || die "mcpgate certs failed"
CERT="$WORK/certs/cert.pem" KEY="$WORK/certs/key.pem"
cat "$CERT" "$KEY" >"$WORK/certs/lb.pem"

IPORT=$(free_port) LBPORT=$(free_port) SPORT=$(free_port)
ISSUER="https://127.0.0.1:$IPORT"
PUBLIC="https://127.0.0.1:$LBPORT"
"$BIN/mcpgate-testissuer" --listen "127.0.0.1:$IPORT" --cert "$CERT" --key "$KEY" \
  --audience "$PUBLIC/mcp" --tokens-dir "$WORK/tokens" >"$WORK/issuer.log" 2>&1 &
PIDS+=($!)
wait_for "$WORK/issuer.log" '^ready' 120 || die "the test issuer did not start" "$WORK/issuer.log"

# Three replicas: one configuration but the replica id and the port; the
# public URL (and so the tokens' audience) is HAProxy's.
declare -A REPLICA_PID
METRICS=()
for i in 0 1 2; do
  port=$(free_port) mport=$(free_port)
  eval "REPLICA_ADDR_$i=127.0.0.1:$port"
  METRICS+=("mcpgate-$i=127.0.0.1:$mport")
  cat >"$WORK/mcpgate-$i.yaml" <<YAML
server:
  listen: 127.0.0.1:$port
  public_url: $PUBLIC
  replica_id: mcpgate-$i
auth:
  issuer: $ISSUER
  issuer_ca_file: $CERT
  required_scopes: [mcp:use]
  write_scope: mcp:write
  user_claim: preferred_username
tls:
  cert_file: $CERT
  key_file: $KEY
database:
  driver: postgres
  dsn: "$MCPGATE_TEST_POSTGRES_DSN"
limits:
  worker_start_timeout: 60s
# Two servers, both the built-in worker on the shared database: db at
# /mcp/db, notes at /mcp/notes, and the combined /mcp over both. HAProxy
# routes every path alike (the replica is in the session id and handle).
servers:
  - name: db
  - name: notes
YAML
  # Each replica's /metrics on a port of its own (metrics.listen), through
  # the environment: a gateway without the metrics listener ignores it.
  env -u MCPGATE_TEST_POSTGRES_DSN -u MCPGATE_REQUIRE_POSTGRES MCPGATE_METRICS_LISTEN="127.0.0.1:$mport" \
    "$BIN/mcpgate" serve --config "$WORK/mcpgate-$i.yaml" >"$WORK/mcpgate-$i.log" 2>&1 &
  REPLICA_PID[$i]=$!
  PIDS+=($!)
done
for i in 0 1 2; do
  wait_for "$WORK/mcpgate-$i.log" 'msg="mcpgate: serving" ' 120 || die "replica mcpgate-$i did not start" "$WORK/mcpgate-$i.log"
done

# Per-replica counts from /metrics, when the gateway has the listener.
METRICS_FLAG=(--metrics "$(IFS=,; echo "${METRICS[*]}")")
grep -q 'name=MCPGATE_METRICS_LISTEN' "$WORK/mcpgate-0.log" && METRICS_FLAG=()

# HAProxy: the shipped configuration, and a stats listener for the test.
cat >"$WORK/stats.cfg" <<CFG
frontend stats
    bind 127.0.0.1:$SPORT
    stats enable
    stats uri /stats
CFG
MCPGATE_LB_BIND="127.0.0.1:$LBPORT" MCPGATE_LB_CERT="$WORK/certs/lb.pem" MCPGATE_LB_CA="$CERT" MCPGATE_LB_SNI=localhost \
MCPGATE_REPLICA_0="$REPLICA_ADDR_0" MCPGATE_REPLICA_1="$REPLICA_ADDR_1" MCPGATE_REPLICA_2="$REPLICA_ADDR_2" \
  haproxy -db -f deploy/haproxy/haproxy.cfg -f "$WORK/stats.cfg" >"$WORK/haproxy.log" 2>&1 &
HAPROXY_PID=$!
PIDS+=($HAPROXY_PID)
for ((i = 0; i < 1200; i++)); do
  kill -0 "$HAPROXY_PID" 2>/dev/null || die "haproxy exited" "$WORK/haproxy.log"
  (exec 3<>"/dev/tcp/127.0.0.1/$SPORT") 2>/dev/null && break
  sleep 0.1
done

SERVERS=(--url "$PUBLIC/mcp/db" --second-url "$PUBLIC/mcp/notes" --combined-url "$PUBLIC/mcp" --servers db,notes)
"$WORK/clusterdrive" "${SERVERS[@]}" --ca "$CERT" --issuer "$ISSUER" --dsn "$MCPGATE_TEST_POSTGRES_DSN" \
  --replicas mcpgate-0,mcpgate-1,mcpgate-2 --stop mcpgate-1 --stop-pid "${REPLICA_PID[1]}" \
  --stats "http://127.0.0.1:$SPORT/stats;csv" "${METRICS_FLAG[@]}"
status=$?

# mcpgate-1 replaced: started again with the same configuration, it rejoins
# (HAProxy sees /readyz pass) and takes new sessions and calls.
if [ $status -eq 0 ]; then
  echo "== mcpgate-1 started again" | tee -a "$WORK/mcpgate-1.log"
  env -u MCPGATE_TEST_POSTGRES_DSN -u MCPGATE_REQUIRE_POSTGRES MCPGATE_METRICS_LISTEN="${METRICS[1]#*=}" \
    "$BIN/mcpgate" serve --config "$WORK/mcpgate-1.yaml" >>"$WORK/mcpgate-1.log" 2>&1 &
  PIDS+=($!)
  "$WORK/clusterdrive" --rejoined "${SERVERS[@]}" --ca "$CERT" --issuer "$ISSUER" --dsn "$MCPGATE_TEST_POSTGRES_DSN" \
    --replicas mcpgate-0,mcpgate-1,mcpgate-2 --stats "http://127.0.0.1:$SPORT/stats;csv"
  status=$?
fi
if [ $status -ne 0 ]; then
  for f in "$WORK"/mcpgate-*.log "$WORK/haproxy.log"; do echo "== $f"; tail -n 30 "$f"; done
fi
exit $status
