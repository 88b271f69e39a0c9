# netreconcile — see README.md. `make test` runs every test; `sudo make demo` runs the demo.
GO ?= go
BIN := bin/netreconcile

.PHONY: all build test
all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/netreconcile

# Fragments owned by sub-projects (VM harness, benches, packaging).
-include mk/*.mk
