# Fuzzing of the configuration loader (internal/desired/fuzz_test.go) and
# its side-file parsers (routes-files, elements-file: sidefile_test.go), of
# the rtnetlink codec's decoders (internal/kernel/rtnl: routes, addresses,
# rules, links), of the daemon's event path (internal/daemon), of the
# readers of nft's listing (show) and of its errors (internal/nftcompile), of the
# nf_tables attribute codec against the kernel's reading (internal/nftwire), and of
# every parser of the state directory (the nftables element cache, the
# transaction record, the ownership ledger, the IPAM registries: a file
# another user may have written; each target checks that what it accepts is
# written back unchanged).
#   make fuzz-short   every target for FUZZTIME_SHORT, or the budget its entry
#                     names (PKG:TARGET:BUDGET; part of make test)
#   make fuzz         every target for FUZZTIME (default 15m each)
# Each target gives its own short budget as a count of executions (Nx), sized
# to a few seconds here: a time budget meets go1.26's coordinator race
# (golang/go#75804: targets failed with "context deadline exceeded" at the
# end of -fuzztime, having found nothing; FuzzSideFiles did in CI). One worker per target by default: the machine is shared.
# New failing inputs land in PKG/testdata/fuzz/TARGET/: commit them, they
# are regression tests from then on. Minimisation is capped so that a short
# run spends its time fuzzing.
FUZZ_TARGETS := ./internal/desired:FuzzLoad:10000x ./internal/desired:FuzzLoadGenerated:10000x ./internal/desired:FuzzSideFiles:20000x \
	./internal/nftcache:FuzzDecodeBody:20000x \
	./internal/kernel/rtnl:FuzzRoute:50000x ./internal/kernel/rtnl:FuzzAddress:50000x ./internal/kernel/rtnl:FuzzRule:50000x \
	./internal/kernel/rtnl:FuzzLink:50000x ./internal/daemon:FuzzEvents:50000x \
	./internal/safeapply:FuzzDecode:20000x ./internal/ledger:FuzzDecode:100000x ./internal/ipam:FuzzDecode:100000x \
	./internal/nftcompile:FuzzParseListing:20000x ./internal/nftcompile:FuzzParseErrors:20000x ./internal/nftwire:FuzzCodec:20000x
FUZZTIME ?= 15m
FUZZTIME_SHORT ?= 15s
FUZZ_PARALLEL ?= 1
FUZZ_MINIMIZE ?= 5s
TEST_TARGETS += fuzz-short

.PHONY: fuzz fuzz-short
fuzz-short: test-deps
	@for pt in $(FUZZ_TARGETS); do \
		p=$${pt%%:*}; rest=$${pt#*:}; t=$${rest%%:*}; d=$${rest#*:}; \
		[ "$$d" != "$$rest" ] || d=$(FUZZTIME_SHORT); \
		echo "fuzz $$t ($$p) for $$d"; \
		$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $$d -fuzzminimizetime $(FUZZ_MINIMIZE) \
			-parallel $(FUZZ_PARALLEL) $$p || exit 1; \
	done

fuzz: test-deps
	@for pt in $(FUZZ_TARGETS); do \
		p=$${pt%%:*}; rest=$${pt#*:}; t=$${rest%%:*}; \
		echo "fuzz $$t ($$p) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZ_MINIMIZE) \
			-parallel $(FUZZ_PARALLEL) $$p || exit 1; \
	done
