# WireGuard: the privileged tests ping through tunnels; bench-wg compares
# netreconcile with wg(8) on wireguard-go devices at 1,000, 5,000 and 10,000
# peers and prints growth tables (test/bench/wgbench says what is measured;
# docs/design.md, "Benchmarks and growth tables", how another benchmark
# prints them with test/bench/growth):
#   make bench-wg BENCH_WG_SIZES=1k,10k BENCH_WG_ROUNDS=7 BENCH_WG_CPUPROFILE=/tmp/wg.prof
# BENCH_WG_CPUPROFILE writes CPU profiles of no-change passes (and, with
# .configure, of configures) at the largest size.
TEST_TOOLS += ping:iputils-ping
BENCH_TARGETS += bench-wg
BENCH_WG_SIZES ?=
BENCH_WG_ROUNDS ?=
BENCH_WG_CPUPROFILE ?=

.PHONY: bench-wg
bench-wg: test-deps
	@out=$$(mktemp); \
	NETRECONCILE_BENCH=1 NETRECONCILE_REQUIRE_PRIVILEGED=1 BENCH_WG_SIZES='$(BENCH_WG_SIZES)' \
		BENCH_WG_ROUNDS='$(BENCH_WG_ROUNDS)' BENCH_WG_CPUPROFILE='$(BENCH_WG_CPUPROFILE)' \
		$(GO) test -count=1 -timeout 60m -v -run '^TestBenchWireGuard$$' ./internal/engine >$$out 2>&1; rc=$$?; \
	grep -v '^=== ' $$out; rm -f $$out; exit $$rc

# The same benchmark in the qemu guest, on the kernel module, which
# production uses and this host lacks (TCG: only the ratios mean anything):
#   make bench-wg-vm BENCH_WG_VM_SIZES=1k,5k,10k BENCH_WG_VM_ROUNDS=3 BENCH_WG_VM_FLAGS=-bench.cpuprofile
BENCH_WG_VM_SIZES ?= 1k,5k,10k
BENCH_WG_VM_ROUNDS ?= 3
BENCH_WG_VM_TIMEOUT ?= 3000
# -bench.cpuprofile prints the guest's CPU profiles, base64 (bench_wg_test.go).
BENCH_WG_VM_FLAGS ?=

.PHONY: bench-wg-vm
bench-wg-vm:
	@echo "bench-wg-vm: host load average $$(cut -d' ' -f1-3 /proc/loadavg) before"
	$(MAKE) vm-test VMRUN='^TestBenchWireGuardKernel$$' VM_TIMEOUT=$(BENCH_WG_VM_TIMEOUT) \
		VMFLAGS='-bench.wg=$(BENCH_WG_VM_SIZES) -bench.rounds=$(BENCH_WG_VM_ROUNDS) $(BENCH_WG_VM_FLAGS)'
	@echo "bench-wg-vm: host load average $$(cut -d' ' -f1-3 /proc/loadavg) after (the table's is the guest's)"
