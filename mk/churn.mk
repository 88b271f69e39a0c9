# The daemon under foreign churn: 100k owned routes while another
# protocol adds and deletes 100k routes in the same table; CPU-seconds per
# 100k foreign events and the p99 repair of a deleted owned route meanwhile.
BENCH_TARGETS += bench-churn

.PHONY: bench-churn
bench-churn: test-deps
	@out=$$(mktemp); \
	NETRECONCILE_BENCH=churn NETRECONCILE_REQUIRE_PRIVILEGED=1 $(GO) test -count=1 -timeout 15m -v \
		-run '^TestDaemonChurn$$' ./internal/daemon >$$out 2>&1; rc=$$?; \
	grep -v '^=== ' $$out; rm -f $$out; exit $$rc

# The daemon's resident memory: steady and peak with 10k routes,
# and with 100k routes, a 100k-element set and 1,000 WireGuard peers; and
# validate's peak on 100k block-style routes.
BENCH_TARGETS += bench-memory

.PHONY: bench-memory
bench-memory: test-deps
	@out=$$(mktemp); \
	NETRECONCILE_BENCH=memory NETRECONCILE_REQUIRE_PRIVILEGED=1 $(GO) test -count=1 -timeout 30m -v \
		-run '^TestDaemonMemory$$' ./internal/daemon >$$out 2>&1; rc=$$?; \
	grep -v '^=== ' $$out; rm -f $$out; exit $$rc
