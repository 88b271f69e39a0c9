# Fuzzing of the configuration loader (internal/desired/fuzz_test.go) and
# its side-file parsers (routes-files, elements-file: sidefile_test.go), of
# the nftables element cache's decoder (internal/nftcache), of the
# rtnetlink codec's decoders (internal/kernel/rtnl: routes, addresses,
# rules, links) and of the daemon's event path (internal/daemon).
#   make fuzz-short   every target for FUZZTIME_SHORT, or the time its entry
#                     names (PKG:TARGET:TIME; part of make test)
#   make fuzz         every target for FUZZTIME (default 15m each)
# One worker per target by default: the machine is shared. New failing
# inputs land in PKG/testdata/fuzz/TARGET/: commit them, they
# are regression tests from then on. Minimisation is capped so that a short
# run spends its time fuzzing.
# The codec's targets are small decoders seeded with a real kernel's
# messages: a few seconds each reach their branches, and keep make test short.
FUZZ_TARGETS := ./internal/desired:FuzzLoad ./internal/desired:FuzzLoadGenerated ./internal/desired:FuzzSideFiles \
	./internal/nftcache:FuzzDecodeBody \
	./internal/kernel/rtnl:FuzzRoute:10s ./internal/kernel/rtnl:FuzzAddress:5s ./internal/kernel/rtnl:FuzzRule:5s \
	./internal/kernel/rtnl:FuzzLink:5s ./internal/daemon:FuzzEvents:10s
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
