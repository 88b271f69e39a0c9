#!/bin/bash
# lanes.sh "A TARGETS..." "B TARGETS..." ...: make test's runner. Each
# argument is a lane: a name, then make targets run one after the other;
# the lanes run side by side. make test runs three (the Makefile says
# which and why): run one after the other, its targets took 30 minutes on
# 2 cores, and none of them keeps both cores busy.
#
# Every line is prefixed with its lane's name. A lane stops at its first
# failing target; the others run on. At the end, a table of each target's
# time, CPU seconds and outcome, and the load; the exit status is 0 only
# when every target passed.
set -uo pipefail
make=${MAKE:-make}
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# cpu: sets cpu_ms to the CPU milliseconds (user and system) this shell's
# waited-for children have used, from the second line of bash's times;
# what a target used is the difference across it, processes it left
# running not counted. Called as is, not in $(...): a forked shell's
# children are its own.
cpu() {
	local u s
	times >"$results/.times.$BASHPID"
	{ read -r _ _ && read -r u s; } <"$results/.times.$BASHPID"
	cpu_ms=$(awk -v u="$u" -v s="$s" 'function sec(t, m) { split(t, m, "m"); return m[1] * 60 + m[2] } BEGIN { printf "%d", (sec(u) + sec(s)) * 1000 }')
}

lane() { # NAME TARGETS...
	local name=$1 t start rc c0 cpu_ms
	shift
	for t in "$@"; do
		start=$(date +%s)
		cpu
		c0=$cpu_ms
		"$make" --no-print-directory "$t" 2>&1 | sed -u "s/^/[$name] /"
		rc=${PIPESTATUS[0]}
		cpu
		printf '%s\t%s\t%d\t%d\t%d\n' "$name" "$t" "$(($(date +%s) - start))" "$rc" "$(((cpu_ms - c0) / 1000))" >>"$results/$name"
		if [ "$rc" != 0 ]; then
			echo "[$name] $t failed (exit $rc): the lane stops here"
			return "$rc"
		fi
	done
}

t0=$(date +%s)
pids=()
for spec in "$@"; do
	# shellcheck disable=SC2086 # a lane's targets are words
	lane $spec &
	pids+=($!)
done
failed=0
for p in "${pids[@]}"; do
	wait "$p" || failed=1
done
echo
echo "make test: $(($(date +%s) - t0)) s in all"
printf '  %-6s %-22s %6s %7s  %s\n' lane target seconds cpu-s outcome
cat "$results"/* 2>/dev/null | while IFS=$'\t' read -r name t secs rc cpus; do
	printf '  %-6s %-22s %6d %7d  %s\n' "$name" "$t" "$secs" "$cpus" "$([ "$rc" = 0 ] && echo passed || echo "FAILED (exit $rc)")"
done
echo "  load: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$failed"
