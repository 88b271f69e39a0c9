# IPAM registry throughput (internal/ipam): allocations per second with one process, with 8
# processes at once, and with a new process per allocation (as a CNI plugin runs), then the
# Go benchmark. The registries go to BENCH_IPAM_DIR, by default on the file system of this tree:
# the figures are mostly fsync latency, so measure where the state directory will live
# (BENCH_IPAM_DIR=/var/lib/netreconcile/bench), or on tmpfs (/dev/shm/x) for the CPU cost alone.
BENCH_IPAM_DIR ?= $(CURDIR)/.cache/bench-ipam
BENCH_IPAM_N ?= 2000

BENCH_TARGETS += bench-ipam

.PHONY: bench-ipam
bench-ipam:
	@mkdir -p $(BENCH_IPAM_DIR)
	$(GO) test -c -o $(BENCH_IPAM_DIR)/ipam.test ./internal/ipam
	cd $(BENCH_IPAM_DIR) && ./ipam.test -test.run '^TestThroughput$$' -ipam.throughput \
		-ipam.dir $(BENCH_IPAM_DIR) -ipam.n $(BENCH_IPAM_N)
	cd $(BENCH_IPAM_DIR) && TMPDIR=$(BENCH_IPAM_DIR) ./ipam.test -test.run '^$$' \
		-test.bench '^BenchmarkAllocate$$' -test.benchtime 300x
