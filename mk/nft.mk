# nftables benchmark: interval and hash sets of 10k, 100k and 1M elements
# (NETRECONCILE_BENCH_NFT_SIZES=10k,100k,1M; NETRECONCILE_BENCH_NFT_KINDS=hash
# or interval for one kind) loaded, grown by one element and
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

# nftables' own regression suite (tests/py) through the same differential:
# every rule of its .t files, in every chain of every table of its file, of
# the families netreconcile has (NFTPY_DIRS), through netreconcile and nft -f
# (needs root). The suite is nftables' text and is never committed here:
# NFT_TESTS_PY names a tests/py directory, or else Debian's orig tarball of
# nftables is fetched into .cache/nftpy (when it is reachable, and when the
# release tarball carries tests/py).
#   make test-nftpy NFT_TESTS_PY=/tmp/nftables/tests/py
#   make test-nftpy NFTPY_FILES='^any/ct\.t$$'     one file
NFT_TESTS_PY ?=
NFTPY_VERSION ?= 1.0.6
NFTPY_ORIG ?= https://deb.debian.org/debian/pool/main/n/nftables/nftables_$(NFTPY_VERSION).orig.tar.xz
# The tarball's SHA-256, from Debian's nftables_1.0.6-2+deb12u2.dsc: a
# download that differs is refused.
NFTPY_SHA256 ?= 2407430ddd82987670e48dc2fda9e280baa8307abec04ab18d609df3db005e4c
NFTPY_DIRS ?= any,inet,ip,ip6,arp,bridge,netdev
NFTPY_FILES ?=

.PHONY: test-nftpy
test-nftpy: test-deps
	@dir='$(NFT_TESTS_PY)'; \
	if [ -z "$$dir" ]; then \
		cache=.cache/nftpy/$(NFTPY_VERSION); dir=$$cache/tests/py; \
		if [ ! -d "$$dir" ]; then \
			echo "fetching $(NFTPY_ORIG)"; \
			rm -rf "$$cache" && mkdir -p "$$cache" && \
			curl -fsSL --max-time 300 -o "$$cache/orig.tar.xz" '$(NFTPY_ORIG)' || { \
				rm -rf "$$cache"; \
				echo "$(NFTPY_ORIG) is not reachable: give a tests/py directory of nftables' source as NFT_TESTS_PY=DIR" >&2; exit 1; }; \
			echo '$(NFTPY_SHA256)  '"$$cache/orig.tar.xz" | sha256sum -c --quiet - || { \
				rm -rf "$$cache"; echo "$(NFTPY_ORIG): not the tarball of SHA-256 $(NFTPY_SHA256)" >&2; exit 1; }; \
			tar -xJf "$$cache/orig.tar.xz" -C "$$cache" --strip-components=1 --wildcards '*/tests/py' || { \
				rm -rf "$$cache"; \
				echo "the tarball of nftables $(NFTPY_VERSION) holds no tests/py: give one as NFT_TESTS_PY=DIR" >&2; exit 1; }; \
		fi; \
	fi; \
	NFT_TESTS_PY="$$(cd "$$dir" && pwd)" NFT_TESTS_PY_DIRS='$(NFTPY_DIRS)' NFT_TESTS_PY_FILES='$(NFTPY_FILES)' NETRECONCILE_REQUIRE_PRIVILEGED=1 \
		$(GO) test -count=1 -run '^TestNftTestsPy$$' -v -timeout 60m ./test/nftcorpus
