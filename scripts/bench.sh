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
# the table, never silently. Last, MCP 2026-07-28: 64 stateless clients of 1
# and of 16 users on mcpgate and on the go-sdk server's stateless mode
# (sdk-stateless), with the per-user workers' memory. Then the Go micro-benchmarks of auth/, gateway/,
# worker/ and tools, the forward path among them (gobench.txt). Sized for ≤ 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
export CGO_ENABLED=0

OUT=${BENCH_OUT:-bench/results}
SUPERGATEWAY_VERSION=4.0.0
mkdir -p bin "$OUT"
rm -rf "$OUT/logs"

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
db="$PWD/$OUT/demo.db"
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
			-systems "floor,sdk,mcpgate,mcpgate-nosandbox,mcpgate-tls,supergateway,sdk-stateless")
	fi
else
	skip mcpgate "this checkout's mcpgate has no serve command"
fi

# mcpgate with TLS and JWT: a development certificate, the test issuer
# minting tokens for the gateway's resource, and serve configured against
# it through the environment (MCPGATE_SECTION_KEY), as scripts/test-tls.sh
# does with a file.
if has_command bin/mcpgate serve && has_command bin/mcpgate certs && [ -x bin/mcpgate-testissuer ]; then
	certs="$PWD/$OUT/certs"
	rm -rf "$certs" "$PWD/$OUT/tokens"
	bin/mcpgate certs --dir "$certs" >/dev/null
	# The stateless phase's clients of 16 users: one token each
	# (tokens/users/alice-01.jwt …), when the issuer can write them.
	users=""
	if bin/mcpgate-testissuer --help 2>&1 | grep -q -- --users; then
		users="--users 16"
		args+=(-user-tokens "$PWD/$OUT/tokens/users")
	fi
	args+=(-tls-ca "$certs/cert.pem" -token-file "$PWD/$OUT/tokens/full.jwt"
		-tls-issuer "$PWD/bin/mcpgate-testissuer --listen {issuer} --cert $certs/cert.pem --key $certs/key.pem --audience https://{addr}/mcp --tokens-dir $PWD/$OUT/tokens $users"
		-mcpgate-tls "$PWD/bin/mcpgate serve --listen {addr} --public-url https://{addr} --tls-cert $certs/cert.pem --tls-key $certs/key.pem $gateway_args"
		-mcpgate-tls-env "$gateway_env MCPGATE_AUTH_ISSUER=https://{issuer} MCPGATE_AUTH_ISSUER_CA_FILE=$certs/cert.pem MCPGATE_AUTH_REQUIRED_SCOPES=mcp:use MCPGATE_AUTH_WRITE_SCOPE=mcp:write MCPGATE_AUTH_USER_CLAIM=preferred_username")
else
	skip mcpgate-tls "needs mcpgate serve with TLS and auth, mcpgate certs and cmd/mcpgate-testissuer"
fi

# supergateway from npm, pinned, installed under .bin/ (git-ignored).
sg=.bin/npm/node_modules/.bin/supergateway
if command -v npm >/dev/null && command -v node >/dev/null; then
	if [ ! -x "$sg" ] || ! grep -q "\"version\": \"$SUPERGATEWAY_VERSION\"" .bin/npm/node_modules/supergateway/package.json 2>/dev/null; then
		say "installing supergateway@$SUPERGATEWAY_VERSION under .bin/npm"
		npm install --prefix .bin/npm --no-audit --no-fund --loglevel=error "supergateway@$SUPERGATEWAY_VERSION" >/dev/null || true
	fi
fi
if [ -x "$sg" ]; then
	args+=(-supergateway "$PWD/$sg")
else
	skip supergateway "npm or node is not available (or the install failed)"
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
