# kestrel — see README.md. `make demo` and `make test` are the two set-up commands.
GO      ?= go
BIN     := bin/kestrel
SHA     := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.gitSHA=$(SHA)
# Packages' tests must all finish well inside CI's budget on 2 cores.
TESTFLAGS ?= -timeout 20m

.PHONY: all build test lint bench demo demo-quick clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kestrel

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: lint build
	$(GO) test $(TESTFLAGS) ./...

bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...
	$(BIN) bench gemm --json
	$(BIN) bench step --json

demo: build
	$(BIN) demo

demo-quick: build
	$(BIN) demo --quick

clean:
	rm -rf bin
