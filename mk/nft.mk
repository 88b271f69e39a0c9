# nftables benchmark: interval and hash sets of 10k, 100k and 1M elements
# (NETRECONCILE_BENCH_NFT_SIZES=10k,100k,1M) loaded, grown by one element and
# shrunk by one, by the daemon's engine, by apply and by nft -f in one run,
# printed as growth tables, and one rule changed among 1,000 of a chain,
# by the engine, by apply in this process and by the binary it builds,
# wall clock and CPU, over NETRECONCILE_BENCH_NFT_ROUNDS rounds (15) with
# nft -f in turn (needs root). Its short form,
# TestLargeSetLoadsGrowsShrinks, runs in make test. At 1M, listing the sets
# for the comparisons takes most of the time (over an hour on a loaded 2-core
# machine).
BENCH_TARGETS += bench-nft

.PHONY: bench-nft
bench-nft: test-deps build
	NETRECONCILE_BENCH=nft NETRECONCILE_BENCH_BIN=$(abspath $(BIN)) $(GO) test -count=1 -run '^TestBenchNft(Rules)?$$' -v -timeout 180m ./internal/engine/

# The nftables differential (test/nftcorpus): the whole corpus and 1,000
# generated rules through netreconcile and through nft -f, in fresh
# namespaces (needs root). make test runs a sample of it (test-go).
#   make test-nftdiff NFTDIFF_SEED=N      replay a seed
#   make test-nftdiff NFTDIFF_GENERATED=5000
NFTDIFF_SEED ?=
NFTDIFF_GENERATED ?= 1000

.PHONY: test-nftdiff
test-nftdiff: test-deps
	NETRECONCILE_NFTDIFF=full NFTDIFF_SEED=$(NFTDIFF_SEED) NFTDIFF_GENERATED=$(NFTDIFF_GENERATED) NETRECONCILE_REQUIRE_PRIVILEGED=1 \
		$(GO) test -count=1 -run '^TestNftDifferential$$' -v -timeout 60m ./test/integration
