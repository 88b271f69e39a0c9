# WireGuard: the privileged tests ping through tunnels; bench-wg compares
# netreconcile with `wg setconf` on 1,000 peers.
TEST_TOOLS += ping:iputils-ping
BENCH_TARGETS += bench-wg

.PHONY: bench-wg
bench-wg: test-deps
	NETRECONCILE_BENCH=1 NETRECONCILE_REQUIRE_PRIVILEGED=1 $(GO) test -count=1 -run '^TestBenchWireGuard$$' -v ./internal/engine
