# Fuzzing of the configuration loader (internal/desired/fuzz_test.go) and
# its side-file parsers (routes-files, elements-file: sidefile_test.go), and
# of the nftables element cache's decoder (internal/nftcache).
#   make fuzz-short   every target for FUZZTIME_SHORT (part of make test)
#   make fuzz         every target for FUZZTIME (default 15m each)
# One worker per target by default: the machine is shared. New failing
# inputs land in PKG/testdata/fuzz/TARGET/: commit them, they
# are regression tests from then on. Minimisation is capped so that a short
# run spends its time fuzzing.
FUZZ_TARGETS := ./internal/desired:FuzzLoad ./internal/desired:FuzzLoadGenerated ./internal/desired:FuzzSideFiles \
	./internal/nftcache:FuzzDecodeBody
FUZZTIME ?= 15m
FUZZTIME_SHORT ?= 15s
FUZZ_PARALLEL ?= 1
FUZZ_MINIMIZE ?= 5s
TEST_TARGETS += fuzz-short

.PHONY: fuzz fuzz-short
fuzz-short: test-deps
	@for pt in $(FUZZ_TARGETS); do \
		p=$${pt%%:*}; t=$${pt#*:}; \
		echo "fuzz $$t ($$p) for $(FUZZTIME_SHORT)"; \
		$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME_SHORT) -fuzzminimizetime $(FUZZ_MINIMIZE) \
			-parallel $(FUZZ_PARALLEL) $$p || exit 1; \
	done

fuzz: test-deps
	@for pt in $(FUZZ_TARGETS); do \
		p=$${pt%%:*}; t=$${pt#*:}; \
		echo "fuzz $$t ($$p) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZ_MINIMIZE) \
			-parallel $(FUZZ_PARALLEL) $$p || exit 1; \
	done
