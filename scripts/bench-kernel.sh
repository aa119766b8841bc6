#!/usr/bin/env bash
# Go against C, in one session: runs `flowrun bench kernel --op
# gather-reduce` and the C reference (scripts/bench-gather-c.sh) alternately,
# ROUNDS times (default 5) for each thread count in THREADS (default "1 2"),
# on the same sizes (extra flags go to both), and prints each pair and the
# medians, of wall-time GB/s (gbps, the figure the bench reports) and of
# GB/s over CPU time per thread (gbps_cpu, which load from other processes
# barely moves). Alternating matters on a shared machine: load drifts
# between two separate runs. NICE (e.g. -20, as root) runs both at that
# priority; IMPL=go measures the pure-Go loops; FLOWRUN=path uses that
# flowrun binary instead of building one.
#
#   ROUNDS=7 NICE=-20 scripts/bench-kernel.sh --reps 20
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-5}"
THREADS="${THREADS:-1 2}"
IMPL="${IMPL:-auto}"
NICE="${NICE:-0}"
mkdir -p bin
if [ -z "${FLOWRUN:-}" ]; then
	go build -o bin/flowrun ./cmd/flowrun
	FLOWRUN=bin/flowrun
fi
scripts/bench-gather-c.sh --tables 1 --rows 1024 --reps 1 >/dev/null # build it

med() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

for th in $THREADS; do
	gw=() gc=() cw=() cc=()
	for round in $(seq "$ROUNDS"); do
		g=$(nice -n "$NICE" "$FLOWRUN" bench kernel --op gather-reduce --threads "$th" --options "{\"impl\":\"$IMPL\"}" --json "$@")
		c=$(nice -n "$NICE" scripts/bench-gather-c.sh --threads "$th" "$@")
		gw+=("$(jq -r .gbps <<<"$g")") gc+=("$(jq -r .gbps_cpu <<<"$g")")
		cw+=("$(jq -r .gbps <<<"$c")") cc+=("$(jq -r .gbps_cpu <<<"$c")")
		printf 'threads %s round %s: wall go %.2f c %.2f (%.3f)   cpu go %.2f c %.2f (%.3f) GB/s\n' "$th" "$round" \
			"${gw[-1]}" "${cw[-1]}" "$(bc -l <<<"${gw[-1]} / ${cw[-1]}")" "${gc[-1]}" "${cc[-1]}" "$(bc -l <<<"${gc[-1]} / ${cc[-1]}")"
	done
	a=$(printf '%s\n' "${gw[@]}" | med) b=$(printf '%s\n' "${cw[@]}" | med)
	x=$(printf '%s\n' "${gc[@]}" | med) y=$(printf '%s\n' "${cc[@]}" | med)
	printf 'threads %s median (go %s): wall go %.2f c %.2f GB/s, go/c %.3f;  cpu go %.2f c %.2f GB/s, go/c %.3f\n' \
		"$th" "$IMPL" "$a" "$b" "$(bc -l <<<"$a / $b")" "$x" "$y" "$(bc -l <<<"$x / $y")"
done
