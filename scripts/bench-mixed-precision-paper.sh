#!/usr/bin/env bash
# The mixed-precision cache paper's accuracy tables at flowrun's scaled
# configuration (docs/benchmarks-mixed-precision.md): host tables at
# FP16/INT8/INT4/INT2, nearest and stochastic rounding, no cache or an FP32
# builtin:mpcache (direct-mapped LRU, direct-mapped LFU, 32-way LFU) of
# 5/10/30/50 % of each table, over several seeds, each against the FP32
# reference of the same seed. Prints
#   * the relative accuracy drop (Eq. 1; mean, min and max over the seeds)
#     beside Tables 2–5, and the held-out logloss change,
#   * the cache's hit rate per distinct row of a batch beside Table 6,
#   * Table 11's compression factors: Eq. 2–3 from flowrun's results.json
#     (memory_compression.eq3 at D = 128, every table low-precision), plus
#     Eq. 2's cache terms,
# and writes OUT/*.json (flowrun bench's JSON) and OUT/paper.json (every
# run with its drop, for `flowrun report OUT/paper.json --out DIR`, whose
# `accuracy` figure is the drop against memory).
#
#   scripts/bench-mixed-precision-paper.sh [--quick | --full] [--seeds N] [OUT]
#
# --quick (the default, 28 runs a seed): no cache at every precision
# and rounding; 32-way LFU at 5 and 30 % for INT8/INT4/INT2; the two
# direct-mapped caches at 5 % for INT8/INT4; 5 seeds. --full: the
# paper's grid, 2 roundings × (4 precisions × (no cache + 2 direct-mapped
# caches × 4 sizes) + INT8/INT4/INT2 × 32-way LFU × 4 sizes; Table 3 has
# no FP16) = 96 runs a seed. Each run trains 60 batches and evaluates
# 8: 2 s (FP32) to 7.5 s (INT8 with the cache) here on 2 busy cores; the
# script prints its estimate after timing the FP32 references (quick:
# about 15 min at 5 seeds; full: about an hour). FLOWRUN: a flowrun
# binary to use (default: build bin/flowrun).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=quick seeds=5 out=bench-out/mixed-precision-paper
while (($#)); do
	case $1 in
	--quick) mode=quick ;;
	--full) mode=full ;;
	--seeds) seeds=$2; shift ;;
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	-*) echo "unknown flag $1" >&2; exit 2 ;;
	*) out=$1 ;;
	esac
	shift
done
flowrun=${FLOWRUN:-bin/flowrun}
[[ -n ${FLOWRUN:-} ]] || go build -o "$flowrun" ./cmd/flowrun
mkdir -p "$out"
seedlist=$(seq -s, 1 "$seeds")

if [[ $mode == full ]]; then
	nc_prec=fp16,int8,int4,int2 lfu_prec=int8,int4,int2 lfu_size=0.05,0.1,0.3,0.5
	dm_prec=fp16,int8,int4,int2 dm_size=0.05,0.1,0.3,0.5
else
	nc_prec=fp16,int8,int4,int2 lfu_prec=int8,int4,int2 lfu_size=0.05,0.3
	dm_prec=int8,int4 dm_size=0.05
fi
count() { awk -F, '{print NF}' <<<"$1"; }
nc_runs=$(($(count $nc_prec) * 2))
lfu_runs=$(($(count $lfu_prec) * 2 * $(count $lfu_size)))
dm_runs=$(($(count $dm_prec) * 2 * $(count $dm_size) * 2))
R=(--sweep embedding.rounding=nearest,stochastic)

echo "== FP32 references, seeds $seedlist" >&2
"$flowrun" bench graphs/mixed-precision-fp32.yaml --sweep seed="$seedlist" -q --out "$out/fp32.json"
python3 - "$out/fp32.json" "$seeds" "$nc_runs" "$((lfu_runs + dm_runs))" <<'PY' >&2
import json, sys
d = json.load(open(sys.argv[1]))
per = d["wall_ms"] / 1e3 / len(d["runs"])
seeds, nc, cached = map(int, sys.argv[2:])
# Measured here (2 shared cores): a low-precision run without a cache takes
# about 2× the FP32 graph's time, one with the cache pipeline about 3.5×.
est = seeds * (nc * 2 * per + cached * 3.5 * per)
print(f"== {seeds * (nc + cached)} runs: about {est / 60:.0f} min at {per:.1f} s per FP32 run")
PY

echo "== no cache: $nc_prec" >&2
"$flowrun" bench graphs/mixed-precision-fp32.yaml --sweep seed="$seedlist" \
	--sweep embedding.precision="$nc_prec" "${R[@]}" -q --out "$out/nocache.json"
echo "== 32-way LFU: $lfu_prec at $lfu_size" >&2
"$flowrun" bench graphs/mixed-precision.yaml --sweep seed="$seedlist" \
	--sweep embedding.precision="$lfu_prec" "${R[@]}" --sweep cache.size="$lfu_size" \
	--set cache.options.ways=32 --set cache.options.replacement=lfu -q --out "$out/lfu32.json"
echo "== direct-mapped LFU and LRU: $dm_prec at $dm_size" >&2
"$flowrun" bench graphs/mixed-precision.yaml --sweep seed="$seedlist" \
	--sweep embedding.precision="$dm_prec" "${R[@]}" --sweep cache.size="$dm_size" \
	--sweep cache.options.replacement=lfu,lru --set cache.options.ways=1 -q --out "$out/dm.json"
echo "== Table 11: Eq. 2–3 at D = 128, every table low-precision" >&2
"$flowrun" bench graphs/mixed-precision-fp32.yaml --set dataset.dim=128 --set dataset.batches=1 \
	--set dataset.eval_batches=1 --set embedding.lowprec_min_rows=0 \
	--sweep embedding.precision=int8,int4,int2 -q --out "$out/table11.json"

# The tables, beside the paper's (docs/benchmarks-mixed-precision.md has
# their provenance), and OUT/paper.json: every run with its drop against
# the FP32 run of its seed.
python3 - "$out" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
def load(name):
    path = os.path.join(out, name + ".json")
    return json.load(open(path)) if os.path.exists(path) else {"runs": []}
# The paper's Tables 2-6 and 11 [T] (docs/benchmarks-mixed-precision.md):
# nearest / stochastic per precision; Table 3 has no FP16 column.
T2 = {"fp16": (0.047, -0.010), "int8": (0.549, 0.077), "int4": (1.080, 0.591), "int2": (1.454, 1.037)}
T3 = {0.05: {"int8": (0.074, -0.014), "int4": (0.251, 0.110), "int2": (0.376, 0.275)},
      0.1: {"int8": (0.033, -0.013), "int4": (0.157, 0.073), "int2": (0.257, 0.196)},
      0.3: {"int8": (0.000, -0.021), "int4": (0.043, -0.009), "int2": (0.086, 0.077)},
      0.5: {"int8": (-0.005, -0.008), "int4": (0.018, -0.004), "int2": (0.042, 0.025)}}
T4 = {0.05: {"fp16": (0.005, -0.005), "int8": (0.180, 0.010), "int4": (0.520, 0.259), "int2": (0.602, 0.872)},
      0.1: {"fp16": (0.003, 0.004), "int8": (0.144, 0.008), "int4": (0.430, 0.212), "int2": (0.761, 0.536)},
      0.3: {"fp16": (0.004, -0.008), "int8": (0.093, 0.006), "int4": (0.321, 0.164), "int2": (0.582, 0.425)},
      0.5: {"fp16": (0.006, -0.016), "int8": (0.043, -0.004), "int4": (0.246, 0.143), "int2": (0.462, 0.352)}}
T5 = {0.05: {"fp16": (-0.006, -0.001), "int8": (0.087, 0.014), "int4": (0.333, 0.147), "int2": (0.533, 0.423)},
      0.1: {"fp16": (-0.011, -0.003), "int8": (0.063, 0.008), "int4": (0.270, 0.138), "int2": (0.430, 0.375)},
      0.3: {"fp16": (-0.004, -0.003), "int8": (0.044, 0.009), "int4": (0.175, 0.090), "int2": (0.280, 0.243)},
      0.5: {"fp16": (-0.018, -0.008), "int8": (0.014, 0.008), "int4": (0.136, 0.056), "int2": (0.217, 0.193)}}
T6 = {"32-way LFU": {0.05: 77.66, 0.1: 83.63, 0.3: 92.45, 0.5: 96.13},
      "DM LFU": {0.05: 75.65, 0.1: 81.21, 0.3: 89.07, 0.5: 92.43},
      "DM LRU": {0.05: 68.22, 0.1: 75.18, 0.3: 85.66, 0.5: 90.12}}
T11 = [(8, 0, 0.26563), (4, 0, 0.14063), (2, 0, 0.07813), (4, 0.3, 0.45078), (8, 0.1, 0.37422),
       (8, 0.05, 0.32383), (4, 0.1, 0.24922), (4, 0.05, 0.19883), (2, 0.1, 0.18672), (2, 0.05, 0.13633)]
ROUND = ("nearest", "stochastic")

def point(r):
    return dict(kv.split("=", 1) for kv in r.get("point", []))

ref, fp32, merged = {}, {}, []
for r in load("fp32")["runs"]:
    m = r["results"]["metrics"]
    ref[point(r)["seed"]] = (m["accuracy"], m["auc"])
    r["graph"], r["accuracy_drop_pct"] = "FP32", 0.0
    fp32[point(r)["seed"]] = r
# cells[(cache, size, precision, rounding)] = [(accuracy drop %, AUC drop %, distinct hit rate)], seeds in order
cells = {}
for name, cache in (("nocache", None), ("lfu32", "32-way LFU"), ("dm", "DM")):
    for r in load(name)["runs"]:
        if r.get("error"):
            print(f"failed: {r['graph']} {r['point']}: {r['error']}", file=sys.stderr)
            continue
        p, m = point(r), r["results"]["metrics"]
        acc, auc = ref[p["seed"]]
        drop = (acc - m["accuracy"]) / acc * 100
        kind = cache if cache != "DM" else "DM " + p["cache.options.replacement"].upper()
        size = float(p.get("cache.size", 0))
        c = r["results"].get("cache") or {}
        cells.setdefault((kind, size, p["embedding.precision"], p["embedding.rounding"]), []).append(
            (drop, (auc - m["auc"]) / auc * 100, c.get("distinct_hit_rate")))
        r["accuracy_drop_pct"] = drop
        r["graph"] = kind or "no cache"
        # A comparison of two graphs: the FP32 run of the seed first.
        merged += [dict(fp32[p["seed"]], point=r["point"]), r]

def cell(key, i=0):
    v = cells.get(key)
    if not v:
        return None
    d = [x[i] for x in v]
    return statistics.mean(d), min(d), max(d)

def fmt(c, digits=2):
    return "-" if c is None else f"{c[0]:+.{digits}f} [{c[1]:+.{digits}f}, {c[2]:+.{digits}f}]"

n = len(ref)
print(f"Relative accuracy drop % (Eq. 1, against FP32 at the same seed): paper [T]; flowrun mean [min, max] over {n} seeds;"
      " and flowrun's relative AUC drop %, the same formula on the held-out AUC.")
print(f"FP32 held-out accuracy over the seeds: {min(a for a, _ in ref.values()):.4f} to {max(a for a, _ in ref.values()):.4f}")
tables = [("Table 2, no cache", None, {0: T2}), ("Table 3, 32-way LFU", "32-way LFU", T3),
          ("Table 4, direct-mapped LRU", "DM LRU", T4), ("Table 5, direct-mapped LFU", "DM LFU", T5)]
for title, kind, paper in tables:
    rows = []
    for size, ptab in paper.items():
        for prec, pv in ptab.items():
            for i, rnd in enumerate(ROUND):
                c = cell((kind, float(size), prec, rnd))
                if c:
                    a = cell((kind, float(size), prec, rnd), 1)
                    rows.append(f"{size * 100:3.0f} %  {prec:5} {rnd:10}  {pv[i]:+7.3f}  {fmt(c):>24}  {fmt(a, 3):>27}")
    if rows:
        print(f"\n{title}\ncache  prec  rounding      paper    flowrun acc drop %          flowrun AUC drop %")
        print("\n".join(rows))

def mean(kind, size, prec, rnd, i=0):
    v = cells.get((kind, size, prec, rnd))
    return statistics.mean(x[i] for x in v) if v else None

def wins(a, b):
    """Seeds at which cell a has a lower AUC drop than cell b (cells list seeds in order)."""
    va, vb = cells.get(a), cells.get(b)
    if not va or not vb:
        return "-"
    return f"{sum(x[1] < y[1] for x, y in zip(va, vb))}/{min(len(va), len(vb))}"

print("\nOrderings: mean accuracy drop % (mean AUC drop %); 'wins': seeds where the first has the lower AUC drop")
for prec in ("int8", "int4"):
    a, b = (None, 0.0, prec, "stochastic"), (None, 0.0, prec, "nearest")
    if cells.get(a) and cells.get(b):
        print(f"  {prec} no cache: stochastic {mean(*a):+.3f} ({mean(*a, i=1):+.4f}) vs nearest {mean(*b):+.3f} ({mean(*b, i=1):+.4f}), wins {wins(a, b)}")
for prec in ("int8", "int4", "int2"):
    for rnd in ROUND:
        seq = [(s, mean(k, s, prec, rnd), mean(k, s, prec, rnd, 1)) for k, s in
               [(None, 0.0)] + [("32-way LFU", s) for s in (0.05, 0.1, 0.3, 0.5)] if cells.get((k, s, prec, rnd))]
        if len(seq) > 1:
            print(f"  {prec} {rnd} 32-way LFU by size: " + ", ".join(f"{s * 100:.0f} % {d:+.3f} ({l:+.4f})" for s, d, l in seq))
for prec in ("fp16", "int8", "int4", "int2"):
    for rnd in ROUND:
        for s in (0.05, 0.1, 0.3, 0.5):
            ks = [(k, s, prec, rnd) for k in ("DM LRU", "DM LFU", "32-way LFU")]
            if all(cells.get(k) for k in ks):
                print(f"  {prec} {rnd} {s * 100:.0f} %: DM LRU {mean(*ks[0]):+.3f} ({mean(*ks[0], i=1):+.4f}), DM LFU "
                      f"{mean(*ks[1]):+.3f} ({mean(*ks[1], i=1):+.4f}), 32-way LFU {mean(*ks[2]):+.3f} ({mean(*ks[2], i=1):+.4f}); "
                      f"32-way LFU below DM LFU at {wins(ks[2], ks[1])} seeds")
c = cell(("32-way LFU", 0.05, "int8", "stochastic"))
if c:
    print(f"  INT8 + 5 % 32-way LFU stochastic: {fmt(c)} (paper −0.014); AUC drop "
          f"{fmt(cell(('32-way LFU', 0.05, 'int8', 'stochastic'), 1), 3)}; within 0.05 points of neutral by the mean: "
          f"accuracy {'yes' if abs(c[0]) <= 0.05 else 'no'}, AUC {'yes' if abs(cell(('32-way LFU', 0.05, 'int8', 'stochastic'), 1)[0]) <= 0.05 else 'no'}")

print("\nHit rate per distinct row of a batch, all 26 tables, training batches (Table 6 [T]: 15 tables of > 1K rows)")
print("cache  kind          paper     flowrun")
for kind, sizes in T6.items():
    for s, pv in sizes.items():
        hs = [x[2] for (k, sz, _, _), v in cells.items() if k == kind and sz == s for x in v if x[2] is not None]
        if hs:
            print(f"{s * 100:4.0f} %  {kind:12} {pv:6.2f} %   {statistics.mean(hs) * 100:6.2f} %")

print("\nTable 11, memory compression factor at D = 128 (LFU): flowrun's results.json memory_compression.eq3 "
      "(every table at the precision, no cache) + Eq. 2's cache terms c·(32·D + 32)/(32·D) + 32/(32·D)")
eq3 = {}
t11 = load("table11")["runs"]
for r in t11:
    mc = r["results"]["memory_compression"]
    eq3[{"int8": 8, "int4": 4, "int2": 2}[mc["precision"]]] = mc["eq3"]
D = 128
print("bits  cache  paper     flowrun")
for bits, c, paper in T11 if eq3 else []:
    f = eq3[bits] + (c * (32 * D + 32) + 32) / (32 * D) if c else eq3[bits]
    print(f"{bits:4}  {c:5.2f}  {paper:.5f}   {f + 5e-12:.5f}" + ("  (3.09×)" if (bits, c) == (8, 0.05) else ""))

json.dump({"kind": "flowrun-bench", "graphs": ["graphs/mixed-precision-fp32.yaml", "low precision"], "runs": merged},
          open(os.path.join(out, "paper.json"), "w"))
print(f"\n{len(merged) // 2} runs, each after the FP32 run of its seed: {os.path.join(out, 'paper.json')}"
      " (flowrun report draws it)")
PY
