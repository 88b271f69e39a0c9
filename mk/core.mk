# Core pipeline benchmark: route convergence against ip -batch, and a no-op
# reconcile of 100k owned routes among 100k foreign ones (needs root).
BENCH_TARGETS += bench-core

.PHONY: bench-core
bench-core: build
	$(GO) run ./test/bench/routes -bin $(BIN)
