# WireGuard: the privileged tests ping through tunnels; bench-wg compares
# netreconcile with `wg setconf` on 1,000 peers.
TEST_TOOLS += ping:iputils-ping
BENCH_TARGETS += bench-wg

.PHONY: bench-wg
bench-wg: test-deps
	NETRECONCILE_BENCH=1 NETRECONCILE_REQUIRE_PRIVILEGED=1 $(GO) test -count=1 -run '^TestBenchWireGuard$$' -v ./internal/engine

# The same benchmark in the qemu guest, on the kernel module (TCG: only the
# ratios mean anything):
#   make bench-wg-vm BENCH_WG_VM_SIZES=1k,5k,10k BENCH_WG_VM_ROUNDS=3
BENCH_WG_VM_SIZES ?= 1k,5k,10k
BENCH_WG_VM_ROUNDS ?= 3
BENCH_WG_VM_TIMEOUT ?= 2400
.PHONY: bench-wg-vm
bench-wg-vm:
	$(MAKE) vm-test VMRUN='^TestBenchWireGuardKernel$$' VM_TIMEOUT=$(BENCH_WG_VM_TIMEOUT) \
		VMFLAGS='-bench.wg=$(BENCH_WG_VM_SIZES) -bench.rounds=$(BENCH_WG_VM_ROUNDS)'
