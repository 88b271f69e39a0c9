# Fuzzing of the configuration loader (internal/desired/fuzz_test.go).
#   make fuzz-short   every target for FUZZTIME_SHORT (part of make test)
#   make fuzz         every target for FUZZTIME (default 15m each)
# One worker per target by default: the machine is shared. New failing
# inputs land in internal/desired/testdata/fuzz/TARGET/: commit them, they
# are regression tests from then on. Minimisation is capped so that a short
# run spends its time fuzzing.
FUZZ_TARGETS := FuzzLoad FuzzLoadGenerated
FUZZ_PKG := ./internal/desired
FUZZTIME ?= 15m
FUZZTIME_SHORT ?= 15s
FUZZ_PARALLEL ?= 1
FUZZ_MINIMIZE ?= 5s
TEST_TARGETS += fuzz-short

.PHONY: fuzz fuzz-short
fuzz-short: test-deps
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $$t for $(FUZZTIME_SHORT)"; \
		$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME_SHORT) -fuzzminimizetime $(FUZZ_MINIMIZE) \
			-parallel $(FUZZ_PARALLEL) $(FUZZ_PKG) || exit 1; \
	done

fuzz: test-deps
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $$t for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZ_MINIMIZE) \
			-parallel $(FUZZ_PARALLEL) $(FUZZ_PKG) || exit 1; \
	done
