# nftables benchmark: a 100k-element interval set loaded, then grown by one
# element, and one rule changed among 1,000 of a chain, by netreconcile and
# by nft -f in one run (needs root).
BENCH_TARGETS += bench-nft

.PHONY: bench-nft
bench-nft: test-deps
	NETRECONCILE_BENCH=nft $(GO) test -count=1 -run '^TestBenchNft(Rules)?$$' -v -timeout 30m ./internal/engine/
