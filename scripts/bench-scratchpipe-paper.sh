#!/usr/bin/env bash
# ScratchPipe at the paper's configuration, modeled (docs/benchmarks.md,
# "ScratchPipe at the paper's configuration"): 8 tables × 10M rows × dim
# 128, 20 lookups, batch 2048, the DLRM MLPerf MLPs, V100 + PCIe gen3 +
# Xeon E5-2698 v4, a 2.5 % cache, for each locality; the no-cache,
# straw-man and ScratchPipe graphs in one bench, the static cache in its
# own (it profiles the batches before the timed ones). Writes
# OUT/LOCALITY.json and OUT/LOCALITY-static.json (flowrun report draws
# them). Slow: each batch takes seconds of wall time.
#
#   scripts/bench-scratchpipe-paper.sh [OUT] [LOCALITY...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-out/scratchpipe-paper}
shift || true
localities=("${@:-random low medium high}")
read -r -a localities <<<"${localities[*]}"
flowrun=${FLOWRUN:-bin/flowrun}
[[ -x $flowrun ]] || scripts/build.sh >/dev/null
mkdir -p "$out"
P=(--set model.options.preset=scratchpipe --set dataset.dim=128 --set dataset.lookups=20
   --set dataset.batch_size=2048 --set dataset.rows=10000000 --set dataset.eval_batches=0
   --set cache.size=0.025)
for loc in "${localities[@]}"; do
	# Batches and warm-up: the scratchpad is full (every timed batch writes
	# victims back) after 6 batches at random and low locality, 7 at
	# medium, 27 at high.
	case $loc in
	random | low) batches=11 warmup=7 ;;
	medium) batches=12 warmup=8 ;;
	high) batches=34 warmup=28 ;;
	*) echo "unknown locality $loc" >&2; exit 2 ;;
	esac
	echo "== $loc: $batches batches, timed from $warmup" >&2
	"$flowrun" bench graphs/no-cache.yaml graphs/strawman.yaml graphs/scratchpipe.yaml "${P[@]}" \
		--set dataset.locality="$loc" --set dataset.batches="$batches" --warmup "$warmup" --out "$out/$loc.json"
	static=()
	if [[ $loc != high ]]; then
		# Profile the warm-up batches, time the ones after them.
		static=(--set cache.options.warmup_batches="$warmup")
	fi
	"$flowrun" bench graphs/static-cache.yaml "${P[@]}" "${static[@]}" \
		--set dataset.locality="$loc" --set dataset.batches="$batches" --warmup "$warmup" --out "$out/$loc-static.json"
done
