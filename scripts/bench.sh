#!/usr/bin/env bash
# make bench: build everything, run every available system side by side in one
# run on loopback, print one table, and write bench/results/ (results.json,
# results.csv, table.md, latency.png, logs/).
#
#   scripts/bench.sh [mcpbench run flags…]     e.g. scripts/bench.sh -duration 5s
#   BENCH_FLAGS="-hold 200" make bench         the same through make
#   BENCH_GO=0 scripts/bench.sh …              without the Go micro-benchmarks
#
# A system whose pieces are missing on this checkout is skipped with a note in
# the table, never silently. Then the paired calls (DPoP against Bearer, the
# combined /mcp against /mcp/NAME, the local shim and socket against TCP),
# each skipped with its reason where this checkout lacks the feature. Last,
# MCP 2026-07-28: 64 stateless clients of 1, 16 and 64 users on mcpgate,
# mcp-proxy and the go-sdk server's stateless mode (sdk-stateless), with the
# per-user workers' memory. Then the Go micro-benchmarks of auth/, gateway/,
# worker/ and tools, the forward path among them (gobench.txt). Sized for ≤ 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
export CGO_ENABLED=0

OUT=${BENCH_OUT:-bench/results}
SUPERGATEWAY_VERSION=4.0.0
MCP_PROXY_VERSION=6.7.19
mkdir -p bin "$OUT"
rm -rf "$OUT/logs"
OUT_ABS=$(cd "$OUT" && pwd) # BENCH_OUT may be relative or absolute

say() { printf 'bench: %s\n' "$*" >&2; }

say "building"
go build -o bin/mcpgate ./cmd/mcpgate
# serve starts the worker-only build when it sits beside mcpgate: lighter workers
[ -d cmd/mcpgate-worker ] && go build -o bin/mcpgate-worker ./cmd/mcpgate-worker
(cd bench && go build -o ../bin/mcpbench .) # its own module: see bench/go.mod
[ -d cmd/mcpgate-testissuer ] && go build -o bin/mcpgate-testissuer ./cmd/mcpgate-testissuer

# 1,000 sessions over HTTP hold ~2,000 sockets on each side plus three pipes
# per worker, and the harness holds those of every -hold-systems system at
# once; node (supergateway) does not raise its own limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

args=()
skip() { args+=(-skip "$1=$2"); say "skipping $1: $2"; }

# has_command BIN CMD: the program knows the sub-command (so the harness can
# still measure an older build that lacks one, for a comparison).
has_command() {
	local out
	out=$("$1" "$2" --help </dev/null 2>&1 || true)
	[[ $out != *"unknown command"* ]]
}

# The worker: the built-in one over the SQLite demo database when this
# checkout has it, else mcpbench's stand-in serving an echo tool through the
# same go-sdk server code.
db="$OUT_ABS/demo.db"
rm -f "$db" "$db"-wal "$db"-shm
# The gateway's limits, raised so that the 1,000 sessions of one user fit
# (defaults: 1,024 sessions, 256 per user); two connections per session
# (POST and the standalone SSE stream).
limits="MCPGATE_LIMITS_MAX_SESSIONS=2048 MCPGATE_LIMITS_MAX_SESSIONS_PER_USER=2048 MCPGATE_LIMITS_MAX_CONNECTIONS=8192 MCPGATE_METRICS_LISTEN=off"
if has_command bin/mcpgate worker; then
	# The floor's workers and supergateway's are the worker the gateway
	# starts (the worker-only build when there is one, as mcpgate serve
	# prefers it) with the identity, database and GOMAXPROCS the gateway
	# would give them, so that the floor is a bare start of that worker.
	worker="$PWD/bin/mcpgate worker"
	worker_env="MCPGATE_WORKER_USER=bench MCPGATE_WORKER_READ_ONLY=false MCPGATE_WORKER_TOOLS=* MCPGATE_WORKER_DB_DSN=$db"
	if [ -x bin/mcpgate-worker ]; then
		worker="$PWD/bin/mcpgate-worker"
		worker_env="$worker_env GOMAXPROCS=1"
	fi
	args+=(-db "$db" -worker "$worker"
		-worker-env "$worker_env"
		-sdk-server "$PWD/bin/mcpbench sdk-server --listen {addr} --db $db"
		-sdk-stateless "$PWD/bin/mcpbench sdk-server --stateless --listen {addr} --db $db"
		-trivial status
		-realistic "${BENCH_QUERY:-query:{\"sql\":\"SELECT * FROM order_totals ORDER BY order_id\"\}}")
	gateway_env="MCPGATE_DATABASE_PATH=$db $limits"
	gateway_args=""
else
	worker="$PWD/bin/mcpbench stdio-server"
	args+=(-worker "$worker" -note "worker: mcpbench's stand-in (echo tool); this checkout has no built-in worker")
	gateway_env=$limits
	gateway_args="--worker-command '$worker'"
fi

# mcpgate, localhost mode; and once more with the worker sandbox off
# (mcpgate-nosandbox), taking turns with the others, so that the table shows
# what the sandbox costs a session start and a call (docs/sandbox.md).
if has_command bin/mcpgate serve; then
	args+=(-mcpgate "$PWD/bin/mcpgate serve --listen {addr} $gateway_args" -mcpgate-env "$gateway_env")
	if has_command bin/mcpgate sandbox; then
		args+=(-variant "mcpgate-nosandbox=mcpgate:MCPGATE_WORKER_SANDBOX_ENABLED=false"
			-systems "floor,sdk,mcpgate,mcpgate-nosandbox,mcpgate-tls,supergateway,mcp-proxy,sdk-stateless")
	fi
else
	skip mcpgate "this checkout's mcpgate has no serve command"
fi

# mcpgate with TLS and JWT: a development certificate, the test issuer
# minting tokens for the gateway's resource, and serve configured against
# it through the environment (MCPGATE_SECTION_KEY), as scripts/test-tls.sh
# does with a file.
if has_command bin/mcpgate serve && has_command bin/mcpgate certs && [ -x bin/mcpgate-testissuer ]; then
	certs="$OUT_ABS/certs"
	rm -rf "$certs" "$OUT_ABS/tokens"
	bin/mcpgate certs --dir "$certs" >/dev/null
	# The stateless phase's clients of up to 64 users and the held
	# sessions of 16: one token each (tokens/users/alice-01.jwt …), when
	# the issuer can write them.
	users=""
	if bin/mcpgate-testissuer --help 2>&1 | grep -q -- --users; then
		users="--users 64"
		args+=(-user-tokens "$OUT_ABS/tokens/users")
	fi
	args+=(-tls-ca "$certs/cert.pem" -token-file "$OUT_ABS/tokens/full.jwt"
		-tls-issuer "$PWD/bin/mcpgate-testissuer --listen {issuer} --cert $certs/cert.pem --key $certs/key.pem --audience https://{addr}/mcp --tokens-dir $OUT_ABS/tokens $users"
		-mcpgate-tls "$PWD/bin/mcpgate serve --listen {addr} --public-url https://{addr} --tls-cert $certs/cert.pem --tls-key $certs/key.pem $gateway_args"
		-mcpgate-tls-env "$gateway_env MCPGATE_AUTH_ISSUER=https://{issuer} MCPGATE_AUTH_ISSUER_CA_FILE=$certs/cert.pem MCPGATE_AUTH_REQUIRED_SCOPES=mcp:use MCPGATE_AUTH_WRITE_SCOPE=mcp:write MCPGATE_AUTH_USER_CLAIM=preferred_username")
else
	skip mcpgate-tls "needs mcpgate serve with TLS and auth, mcpgate certs and cmd/mcpgate-testissuer"
fi

# supergateway and mcp-proxy from npm, pinned, installed under .bin/
# (git-ignored) before the run, never while it runs.
npm_peer() { # npm_peer SYSTEM PACKAGE VERSION: the program, installed if needed
	local bin=.bin/npm/node_modules/.bin/$2
	if command -v npm >/dev/null && command -v node >/dev/null; then
		if [ ! -x "$bin" ] || ! grep -q "\"version\": \"$3\"" ".bin/npm/node_modules/$2/package.json" 2>/dev/null; then
			say "installing $2@$3 under .bin/npm"
			npm install --prefix .bin/npm --save-exact --no-audit --no-fund --loglevel=error "$2@$3" >/dev/null || true
		fi
	fi
	if [ -x "$bin" ] && grep -q "\"version\": \"$3\"" ".bin/npm/node_modules/$2/package.json" 2>/dev/null; then
		args+=("-$1" "$PWD/$bin")
	else
		skip "$1" "npm or node is not available (or the install of $2@$3 failed)"
	fi
}
npm_peer supergateway supergateway "$SUPERGATEWAY_VERSION"
npm_peer mcp-proxy mcp-proxy "$MCP_PROXY_VERSION"

# The combined pair: a gateway whose configuration lists servers (one,
# "bench", the built-in worker over the demo database), its /mcp against
# /mcp/bench. Skipped when this checkout's configuration has no servers
# list (mcpgate doctor reads the file as serve would).
servers_cfg="$OUT_ABS/servers.yaml"
cat >"$servers_cfg" <<YAML
servers:
  - name: bench
YAML
if ! has_command bin/mcpgate serve; then
	skip combined "this checkout's mcpgate has no serve command"
elif out=$(env $gateway_env bin/mcpgate doctor --config "$servers_cfg" 2>&1 </dev/null); [[ $out == *"FAIL  config"* || $out == *"unknown command"* ]]; then
	skip combined "this checkout's mcpgate does not read a servers list ($(sed -n 's/^FAIL  config  *//p' <<<"$out" | head -1 | cut -c1-160))"
else
	args+=(-mcpgate-servers "$PWD/bin/mcpgate serve --listen {addr} --config $servers_cfg $gateway_args"
		-mcpgate-servers-env "$gateway_env" -servers-name bench)
fi

# The local pair: mcpgate on a Unix socket and the stdio shim to it,
# against mcpgate over TCP. Skipped when the bridge has no --socket.
if has_command bin/mcpgate serve && bin/mcpgate bridge --help 2>&1 </dev/null | grep -q -- --socket; then
	args+=(-local-daemon "$PWD/bin/mcpgate serve --listen unix:{socket} $gateway_args"
		-local-shim "$PWD/bin/mcpgate bridge --socket={socket}")
else
	skip local "this checkout's mcpgate bridge has no --socket (local mode on a Unix socket)"
fi

say "running (results in $OUT)"
# shellcheck disable=SC2086 # BENCH_FLAGS is a list of flags on purpose
bin/mcpbench run -out "$OUT" "${args[@]}" ${BENCH_FLAGS:-} "$@"

# The Go micro-benchmarks of the hot paths (JWT verification, the forward
# path: gateway's BenchmarkForward and any other in auth/, gateway/,
# jsonrpc/ and worker/; gateway's BenchmarkRelay, a 1 MiB and a 16 MiB
# result with its no-gateway baseline, about 15 s of the step; the built-in
# worker's call in a session and in a per-user worker, tools'
# BenchmarkWorkerCall), with allocations, after the systems have stopped.
if [ "${BENCH_GO:-1}" = 0 ]; then
	say "Go benchmarks skipped (BENCH_GO=0)"
else
	pkgs=$(go list ./auth/... ./gateway/... ./jsonrpc/... ./worker/... ./tools 2>/dev/null | tr '\n' ' ')
	if [ -n "$pkgs" ]; then
		say "Go benchmarks (go test -bench, ${BENCH_GOTIME:-1s} each)"
		# shellcheck disable=SC2086
		go test -run '^$' -bench . -benchmem -benchtime "${BENCH_GOTIME:-1s}" $pkgs 2>&1 |
			grep -E '^(Benchmark|ok|FAIL|---)' | tee "$OUT/gobench.txt"
	fi
fi
