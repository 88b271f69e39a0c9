# The configuration loader's time and peak memory on large and hostile
# files: 100k routes flow and block style, 1 MB of aliases, 100k errors,
# and the 1 MB shapes that cost the most per byte (test/bench/parse).
#   make bench-parse BENCH_PARSE_RUNS=5 BENCH_PARSE_BASE=main
# loads each file five times (minimum and median printed) and, interleaved,
# with a build of main: on a shared machine only the ratio is steady. A base
# from before the benchmarks moved under test/ builds internal/bench/parse.
# BENCH_PARSE_FLAGS passes more (-run REGEXP, -keep DIR).
BENCH_TARGETS += bench-parse
BENCH_PARSE_RUNS ?= 1
BENCH_PARSE_BASE ?=
BENCH_PARSE_FLAGS ?=

.PHONY: bench-parse
bench-parse:
	@set -e; flags="-n $(BENCH_PARSE_RUNS)"; \
	if [ -n "$(BENCH_PARSE_BASE)" ]; then \
		d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
		git archive "$(BENCH_PARSE_BASE)" | tar -x -C "$$d"; \
		pkg=./test/bench/parse; [ -d "$$d/test/bench/parse" ] || pkg=./internal/bench/parse; \
		(cd "$$d" && CGO_ENABLED=0 $(GO) build -o base-bench $$pkg); \
		flags="$$flags -base $$d/base-bench"; \
	fi; \
	CGO_ENABLED=0 $(GO) run ./test/bench/parse $$flags $(BENCH_PARSE_FLAGS)
