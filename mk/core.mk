# Core pipeline benchmark: route convergence against ip -batch, a no-op
# reconcile of 100k owned routes among 100k foreign ones (the daemon's pass,
# and apply against it plus the parse), and 10k routes of ours beside up to
# 1.2M foreign ones as a growth table (needs root; BENCH_CORE_FLAGS, e.g.
# -foreign 12k,120k or -only foreign).
BENCH_TARGETS += bench-core

.PHONY: bench-core
bench-core: build
	$(GO) run ./test/bench/routes -bin $(BIN) $(BENCH_CORE_FLAGS)
