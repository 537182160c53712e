# mcpgate — the two set-up commands are `make run` and `make test`.
GO      ?= go
BIN     := bin
ADDR    ?= 127.0.0.1:8000


.PHONY: all build run test test-go test-tls test-alerts test-cluster conformance conformance-client conformance-legacy bench fuzz lint clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/mcpgate ./cmd/mcpgate-worker ./cmd/mcpgate-testissuer

## run: the gateway on http://127.0.0.1:8000/mcp, localhost mode, built-in worker on SQLite.
run: build
	$(BIN)/mcpgate serve --listen $(ADDR)

## test: the whole suite (lint, Go tests with -race, the web pages in
## headless Chromium (web/browsertest, a module of its own), the TLS script,
## the Prometheus alert rules' tests).
test: lint test-go test-tls test-alerts

test-go:
	scripts/with-postgres.sh $(GO) test -race -count=1 -timeout 30m ./...
	cd bench && $(GO) test -race -count=1 ./...
	cd deploy/k8s && $(GO) test -count=1 ./...
	cd web/browsertest && $(GO) test -count=1 ./...

test-tls: build
	scripts/test-tls.sh

## test-alerts: deploy/prometheus/alerts.yml through promtool test rules
## (Debian's prometheus package), every alert tested.
test-alerts:
	scripts/test-alerts.sh

## test-cluster: three replicas behind HAProxy (deploy/haproxy/haproxy.cfg),
## sharing PostgreSQL; installs haproxy and postgresql when missing.
test-cluster: build
	scripts/test-cluster.sh

## conformance: the official MCP conformance suite through the gateway, twice:
## 0.1.16 (revisions up to 2025-11-25) and 0.2.0-alpha.12 with the 2026-07-28 requirements;
## both again with the worker as one server of a servers list, through /mcp/ev and the
## combined /mcp (SERVERS=1; scripts/conformance/combined-expected.txt lists what the
## combined endpoint cannot pass); then its DPoP client scenarios against mcpgate login
## and bridge (conformance-client).
conformance: build
	scripts/conformance.sh
	CONFORMANCE_VERSION=0.2.0-alpha.12 scripts/conformance.sh --requirements 2026-07-28
	SERVERS=1 scripts/conformance.sh
	SERVERS=1 CONFORMANCE_VERSION=0.2.0-alpha.12 scripts/conformance.sh --requirements 2026-07-28
	scripts/conformance/client.sh

## conformance-client: the suite's auth/dpop and auth/dpop-nonce client scenarios (SEP-1932
## extension) with mcpgate login and bridge as the client under test.
conformance-client: build
	scripts/conformance/client.sh

## conformance-legacy: the 2026-07-28 requirements through a worker that speaks only 2025-11-25.
conformance-legacy: build
	CONFORMANCE_VERSION=0.2.0-alpha.12 LEGACY_WORKER=1 scripts/conformance.sh --requirements 2026-07-28

## fuzz: every fuzz target of the module, FUZZTIME (default 45s) each.
fuzz:
	GO=$(GO) scripts/fuzz.sh

## bench: every system side by side; writes bench/results/ and prints the table.
## The harness (bin/mcpbench) is its own module under bench/, so the product's
## go.mod carries none of its dependencies.
bench:
	scripts/bench.sh

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: run gofmt -w on the files above"; exit 1; }
	$(GO) vet ./...
	# The client commands run on users' machines: their packages must build
	# and vet for macOS and Windows too, and the mcpgate binary (doctor and
	# cmd/mcpgate import the gateway's worker package) for macOS; Windows
	# does not build it yet. The local mode (local/) reads peer credentials
	# on Linux only: elsewhere it builds and refuses every peer, saying so.
	GOOS=darwin $(GO) vet ./bridge/... ./oauthclient/... ./install/... ./filelock/... ./doctor/... ./worker/... ./cmd/mcpgate/... ./local/...
	GOOS=windows $(GO) vet ./bridge/... ./oauthclient/... ./install/... ./filelock/... ./local/...
	$(GO) mod tidy -diff
	cd bench && $(GO) vet ./... && $(GO) mod tidy -diff
	cd deploy/k8s && $(GO) vet ./... && $(GO) mod tidy -diff
	cd web/browsertest && $(GO) vet ./... && $(GO) mod tidy -diff

clean:
	rm -rf $(BIN)
