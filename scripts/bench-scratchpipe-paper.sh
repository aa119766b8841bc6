#!/usr/bin/env bash
# ScratchPipe at the paper's configuration, modeled (docs/benchmarks.md,
# "ScratchPipe at the paper's configuration"): 8 tables × 10M rows × dim
# 128, 20 lookups, batch 2048, the DLRM MLPerf MLPs, V100 + PCIe gen3 +
# Xeon E5-2698 v4, a 2.5 % cache, for each locality; the no-cache,
# straw-man and ScratchPipe graphs in one bench, the static cache in its
# own (it profiles the batches before the timed ones). Writes
# OUT/LOCALITY.json and OUT/LOCALITY-static.json (flowrun report draws
# them). Slow: each batch takes seconds of wall time. FLOWRUN: a flowrun
# binary to use (default: build bin/flowrun).
#
#   scripts/bench-scratchpipe-paper.sh [OUT] [LOCALITY...]
#   scripts/bench-scratchpipe-paper.sh --long [OUT]
#
# --long runs ScratchPipe alone at random locality for LONG_BATCHES
# batches (default 200, timed from 7) with the host tables on disk
# (embedding.tables_dir: TABLES_DIR, default OUT/tables, which must be on
# a disk with room for ≈ 34 GB), and writes OUT/random-long.json and a
# line beside Table I and the short run's OUT/random.json when there is
# one. Hours of wall time here.
set -euo pipefail
cd "$(dirname "$0")/.."
long=
if [[ ${1:-} == --long ]]; then
	long=1
	shift
fi
out=${1:-bench-out/scratchpipe-paper}
localities=(random low medium high)
if (($# > 1)); then localities=("${@:2}"); fi
# flowrun as the tree is now, unless FLOWRUN names a binary: the figures
# must come from the current code, and no plugin binary is needed.
flowrun=${FLOWRUN:-bin/flowrun}
[[ -n ${FLOWRUN:-} ]] || go build -o "$flowrun" ./cmd/flowrun
mkdir -p "$out"
P=(--set model.options.preset=scratchpipe --set dataset.dim=128 --set dataset.lookups=20
   --set dataset.batch_size=2048 --set dataset.rows=10000000 --set dataset.eval_batches=0
   --set cache.size=0.025)
if [[ -n $long ]]; then
	batches=${LONG_BATCHES:-200}
	tables=${TABLES_DIR:-$out/tables}
	mkdir -p "$tables"
	echo "== random, $batches batches, timed from 7, tables in $tables" >&2
	"$flowrun" bench graphs/scratchpipe.yaml "${P[@]}" --set dataset.locality=random \
		--set dataset.batches="$batches" --set embedding.tables_dir="$tables" --warmup 7 --out "$out/random-long.json"
	python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
def run(path, graph="scratchpipe"):
    if not os.path.exists(path):
        return None
    return next((r for r in json.load(open(path))["runs"] if r["graph"] == graph), None)
long, short = run(os.path.join(out, "random-long.json")), run(os.path.join(out, "random.json"))
print("ScratchPipe, random locality, modeled ms per batch after warm-up (Table I: 47.82)")
for name, r in (("long", long), ("short", short)):
    if r:
        rss = (r.get("results") or {}).get("host_rss_peak_bytes", 0) / 2**30
        print(f"{name:6} {r.get('modeled_after_warmup_ms', 0):8.2f} ms   peak RSS {rss:6.2f} GiB   digest {r['digest'][:12]}")
if long and short and short.get("modeled_after_warmup_ms"):
    print(f"long / short: {long['modeled_after_warmup_ms'] / short['modeled_after_warmup_ms']:.4f}")
PY
	exit 0
fi
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

# One bench report over the localities (a sweep point each), runs in the
# order static, no-cache, straw-man, ScratchPipe, speedups over the static
# cache as Fig. 13 normalises them: OUT/paper.json, for flowrun report.
# Then the table of docs/benchmarks.md, modeled after warm-up, beside
# Table I.
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
table1 = {"random": 47.82, "low": 44.70, "medium": 29.68, "high": 26.34}
merged, rows = None, []
for loc in ["random", "low", "medium", "high"]:
    paths = [os.path.join(out, f"{loc}-static.json"), os.path.join(out, f"{loc}.json")]
    if not all(os.path.exists(p) for p in paths):
        continue
    static, rest = (json.load(open(p)) for p in paths)
    runs = static["runs"] + rest["runs"]
    if merged is None:
        merged = dict(rest, graphs=[static["graphs"][0]] + rest["graphs"], baseline=static["baseline"],
                      sweep=[{"key": "dataset.locality", "values": []}], runs=[], warmup=rest["warmup"])
    merged["sweep"][0]["values"].append(loc)
    base = runs[0]
    ms = {}
    for r in runs:
        r["point"] = [f"dataset.locality={loc}"]
        m, bm = r.get("modeled_after_warmup_ms", 0), base.get("modeled_after_warmup_ms", 0)
        r["speedup"] = {"wall": base["iteration_ms"]["wall"] / r["iteration_ms"]["wall"],
                        "modeled": bm / m if m > 0 and bm > 0 else 0}
        ms[r["graph"]] = m
        merged["runs"].append(r)
    merged["digests_equal"] = merged.get("digests_equal", True) and len({r["digest"] for r in runs}) == 1
    rows.append((loc, ms))
if merged is None:
    sys.exit(0)
merged["warmup"] = 0  # each locality has its own warm-up; the runs carry their figures
for r in merged["runs"]:
    r["iteration_ms"]["modeled"] = r.get("modeled_after_warmup_ms", r["iteration_ms"]["modeled"])
json.dump(merged, open(os.path.join(out, "paper.json"), "w"), indent=1)
print("modeled ms per batch after warm-up (V100 + PCIe gen3 + Xeon E5-2698 v4)")
print(f"{'locality':9} {'no-cache':>9} {'static':>8} {'strawman':>9} {'scratchpipe':>12} {'Table I':>8} {'diff':>7} {'vs static':>10} {'vs no-cache':>12}")
for loc, ms in rows:
    sp = ms["scratchpipe"]
    print(f"{loc:9} {ms['no-cache']:9.2f} {ms['static-cache']:8.2f} {ms['strawman']:9.2f} {sp:12.2f} {table1[loc]:8.2f} "
          f"{100 * (sp / table1[loc] - 1):+6.0f}% {ms['static-cache'] / sp:9.2f}× {ms['no-cache'] / sp:11.2f}×")
PY
