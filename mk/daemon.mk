# The daemon's latency: file save -> kernel, external delete -> repair,
# median and p99 over 100 trials each (target: both under 200 ms p99).
BENCH_TARGETS += bench-daemon

.PHONY: bench-daemon
bench-daemon: test-deps
	@out=$$(mktemp); \
	NETRECONCILE_BENCH=1 NETRECONCILE_REQUIRE_PRIVILEGED=1 $(GO) test -count=1 -timeout 10m -v \
		-run '^TestDaemonLatency$$' ./internal/daemon >$$out 2>&1; rc=$$?; \
	grep -v '^=== ' $$out; rm -f $$out; exit $$rc
