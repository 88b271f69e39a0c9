# Core pipeline benchmark: route convergence against ip -batch, a no-op
# reconcile of 100k owned routes among 100k foreign ones (the daemon's pass,
# and apply against it plus the parse), and 10k routes of ours beside up to
# 1.2M foreign ones as a growth table; and beside a full table of 1.2M, in
# one run against none: the pass, apply, the daemon's RSS, its CPU per 100k
# foreign events while the table is withdrawn and announced again, and its
# repair delay meanwhile (needs root; BENCH_CORE_FLAGS, e.g.
# -foreign 12k,120k, -full 300k or -only full).
BENCH_TARGETS += bench-core

.PHONY: bench-core
bench-core: build
	$(GO) run ./test/bench/routes -bin $(BIN) $(BENCH_CORE_FLAGS)
