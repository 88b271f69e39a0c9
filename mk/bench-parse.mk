# The configuration loader's time and peak memory on large and hostile
# files: 100k routes flow and block style, 1 MB of aliases, 100k errors.
BENCH_TARGETS += bench-parse

.PHONY: bench-parse
bench-parse:
	$(GO) run ./internal/bench/parse
