# kestrel — see README.md. `make demo` and `make test` are the two set-up commands.
GO      ?= go
BIN     := bin/kestrel
# The commit reaches the run manifest through the linker, so it is there even
# where the toolchain does not stamp VCS information (GOFLAGS=-buildvcs=false).
SHA     := $(shell git rev-parse HEAD 2>/dev/null)
DIRTY   := $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo true || echo false)
BUILDINFO := github.com/kestrel-lm/kestrel/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).gitSHA=$(SHA) -X $(BUILDINFO).gitDirty=$(DIRTY)
# Packages' tests must all finish well inside CI's budget on 2 cores.
TESTFLAGS ?= -timeout 20m

# The dashboard's chart library comes from npm (pinned in package-lock.json)
# and is embedded into the binary; it is never committed.
DASH    := internal/dashboard
ASSETS  := $(DASH)/web/vendor/uPlot.iife.min.js $(DASH)/web/vendor/uPlot.min.css

.PHONY: all build assets test lint bench demo demo-quick clean

all: build

assets: $(ASSETS)

$(ASSETS): $(DASH)/package.json $(DASH)/package-lock.json
	cd $(DASH) && npm ci --no-audit --no-fund --loglevel=error
	mkdir -p $(DASH)/web/vendor
	cp $(DASH)/node_modules/uplot/dist/uPlot.iife.min.js $(DASH)/node_modules/uplot/dist/uPlot.min.css $(DASH)/web/vendor/

build: $(ASSETS)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kestrel

# lint: gofmt, go vet (and on arm64 for the packages with assembly), and go.mod/go.sum exactly as `go mod tidy` leaves them
# (`go mod tidy -diff`, Go 1.23+, prints the change and exits 1 without
# writing; on a fresh machine it downloads what it needs through GOPROXY).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# the pure-Go fallbacks: every package with per-architecture files vets on arm64 too
	GOARCH=arm64 $(GO) vet $$(find . -name '*_amd64*.go' -o -name '*_other*.go' | xargs -n1 dirname | sort -u)
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit the result"; exit 1; }

test: lint build
	$(GO) test $(TESTFLAGS) ./...
	@echo "== end-to-end smoke test: kestrel demo --quick"
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  $(BIN) demo --quick --data-out $$tmp/datasets/demo-quick --out $$tmp/runs/demo-quick > $$tmp/demo.log 2>&1 || \
	  { tail -50 $$tmp/demo.log; echo "demo --quick failed"; exit 1; }; \
	  grep -q "verdict:" $$tmp/demo.log && test -s $$tmp/runs/demo-quick/report/report.md && \
	  { grep -q "^| bench/hellaswag/acc_norm |" $$tmp/runs/demo-quick/report/report.md || \
	    { echo "report.md lacks the benchmark table"; exit 1; }; } && \
	  { grep -q '^\*\*Status:\*\* finished at step' $$tmp/runs/demo-quick/report/report.md && grep -q '^## Samples' $$tmp/runs/demo-quick/report/report.md || \
	    { echo "report.md lacks the run's status or the samples of its checkpoints"; exit 1; }; } && \
	  { [ -z "$(SHA)" ] || grep -q '"git_sha": "$(SHA)"' $$tmp/runs/demo-quick/manifest.json || \
	    { echo "manifest.json lacks git_sha $(SHA)"; exit 1; }; } && \
	  tail -22 $$tmp/demo.log

# fuzz-short: every fuzz target of the module (`func FuzzX` in a _test.go
# file, found by grep so a new one joins without an edit here) for
# FUZZTIME each; .ci/run calls it after make test. Their seeds also run,
# unfuzzed, in make test. A failure leaves the input in the package's
# testdata/fuzz/FuzzX/ (commit it as a seed once fixed). The budget is a
# count of inputs, not a duration: Go 1.26's coordinator can fail a
# duration-limited run with "context deadline exceeded" and no crasher on
# a loaded machine (go.dev/issue/75804, fixed in Go 1.27).
FUZZTIME ?= 1000x
.PHONY: fuzz-short
fuzz-short:
	@grep -rE --include='*_test.go' --exclude-dir=node_modules --exclude-dir=testdata -o '^func Fuzz[A-Za-z0-9_]*' . | sort | \
	while IFS=: read -r file fn; do \
	  pkg=$$(dirname "$$file"); fn=$${fn#func }; \
	  echo "== fuzz $$pkg $$fn ($(FUZZTIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) "$$pkg" >"$${TMPDIR:-/tmp}/kestrel-fuzz.log" 2>&1 || \
	    { tail -40 "$${TMPDIR:-/tmp}/kestrel-fuzz.log"; echo "fuzz $$pkg $$fn failed"; exit 1; }; \
	done

bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...
	$(BIN) bench gemm --json
	$(BIN) bench step --json

demo: build
	$(BIN) demo

demo-quick: build
	$(BIN) demo --quick

clean:
	rm -rf bin $(DASH)/web/vendor $(DASH)/node_modules

# Open MPI (docs/distributed.md): bin/kestrel-mpi is kestrel with the cgo MPI
# backend (build tag mpi, Debian openmpi-bin + libopenmpi-dev); the default
# build above stays cgo-free. test-mpi runs the collectives under mpirun;
# `make test` also runs the data-parallel equality test (internal/train),
# which skips without mpirun unless KESTREL_REQUIRE_MPI=1.
MPIBIN  := bin/kestrel-mpi
MPIRUN  ?= mpirun --oversubscribe --allow-run-as-root
.PHONY: build-mpi test-mpi

build-mpi: $(ASSETS)
	CGO_ENABLED=1 $(GO) build -tags mpi -ldflags "$(LDFLAGS)" -o $(MPIBIN) ./cmd/kestrel

test-mpi: build-mpi
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  CGO_ENABLED=1 $(GO) test -c -tags mpi -o $$tmp/comm.test ./internal/comm && \
	  $(MPIRUN) -np 2 $$tmp/comm.test -test.run MPI && \
	  KESTREL_COMM_HANG_TEST=1 $(MPIRUN) -x KESTREL_COMM_HANG_TEST -np 3 $$tmp/comm.test -test.run MPI -test.v 2>&1 | grep -q "never reached by rank 2" && \
	  echo "test-mpi: collectives and hang detection ok"
	KESTREL_REQUIRE_MPI=1 KESTREL_MPI_BIN=$(CURDIR)/$(MPIBIN) $(GO) test -count=1 -run TestPrepareMPI ./internal/data/prepare
