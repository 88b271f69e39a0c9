# nftables benchmark: interval and hash sets of 10k, 100k and 1M elements
# (NETRECONCILE_BENCH_NFT_SIZES=10k,100k,1M) loaded, grown by one element and
# shrunk by one, by the daemon's engine, by apply and by nft -f in one run,
# printed as growth tables (needs root). Its short form,
# TestLargeSetLoadsGrowsShrinks, runs in make test. At 1M, listing the sets
# for the comparisons takes most of the time (over an hour on a loaded 2-core
# machine).
BENCH_TARGETS += bench-nft

.PHONY: bench-nft
bench-nft: test-deps
	NETRECONCILE_BENCH=nft $(GO) test -count=1 -run '^TestBenchNft$$' -v -timeout 180m ./internal/engine/
