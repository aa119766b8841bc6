#!/usr/bin/env bash
# Go against C, in one session: runs `flowrun bench kernel --op
# gather-reduce` and the C reference (scripts/bench-gather-c.sh) alternately,
# ROUNDS times (default 5) for each thread count in THREADS (default "1 2"),
# on the same sizes (any extra flags go to both), and prints each pair and
# the medians. Alternating matters on a shared machine: load from elsewhere
# drifts between two separate runs.
#
#   ROUNDS=7 scripts/bench-kernel.sh --reps 10
#   IMPL=go scripts/bench-kernel.sh            # the pure-Go loops
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-5}"
THREADS="${THREADS:-1 2}"
IMPL="${IMPL:-auto}"
mkdir -p bin
go build -o bin/flowrun ./cmd/flowrun
scripts/bench-gather-c.sh --tables 1 --rows 1024 --reps 1 >/dev/null # build it

for th in $THREADS; do
	go_all=() c_all=()
	for round in $(seq "$ROUNDS"); do
		g=$(bin/flowrun bench kernel --op gather-reduce --threads "$th" --options "{\"impl\":\"$IMPL\"}" --json "$@" | jq -r .gbps)
		c=$(scripts/bench-gather-c.sh --threads "$th" "$@" | jq -r .gbps)
		printf 'threads %s round %s: go %.2f GB/s, c %.2f GB/s, go/c %.3f\n' "$th" "$round" "$g" "$c" "$(echo "$g / $c" | bc -l)"
		go_all+=("$g") c_all+=("$c")
	done
	gm=$(printf '%s\n' "${go_all[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
	cm=$(printf '%s\n' "${c_all[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
	printf 'threads %s median: go (%s) %.2f GB/s, c %.2f GB/s, go/c %.3f\n' "$th" "$IMPL" "$gm" "$cm" "$(echo "$gm / $cm" | bc -l)"
done
