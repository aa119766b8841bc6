#!/usr/bin/env bash
# RecPipe's headline points (Gupta et al., MICRO'21; docs/benchmarks-recpipe.md,
# "Paper vs flowrun"), from trained models:
#
#  1. Quality, measured: NDCG@64 of the 1-, 2- and 3-stage designs
#     (graphs/recpipe-{1,2,3}stage-trained.yaml) and of the 2-stage design
#     with its frontend keeping 64, 1024 or every one of the 4096 items,
#     RMmed as the frontend, the bucketed top-k unit and 4 sub-batches: real
#     scoring of QUERIES held-out queries of 4096 Criteo-shaped candidates
#     by the models scripts/train-recpipe-models.sh trained (it is run first
#     when MODELS has none).
#  2. Latency under load, modeled: every quality run replays its queries'
#     modeled demands on RecPipe's CPU server (builtin:cpu-dram profile
#     cascade-lake, 64 servers, one core each): p99 at 70, 200 and 500
#     QPS, 20,000 Poisson queries per QPS, SLA 25 ms; then flowrun search
#     maps the 1- and 2-stage designs' ranking stages to the CPU or the GPU
#     (builtin:hbm profile t4, one server): the paper's CPU-GPU designs.
#  3. RPAccel against the Centaur-like baseline, modeled: the device
#     plugin's headline replay (go test in plugins/devices/rpaccel), the
#     comparison docs/benchmarks-recpipe-devices.md quotes; the graphs
#     recpipe-centaur and recpipe-rpaccel run the same designs end to end.
#
#   scripts/bench-recpipe-paper.sh [OUT]   # default OUT: bench-out/recpipe-paper
#
# Environment: QUERIES (held-out queries per quality run, default 64),
# MODELS (the trained models, default bench-out/recpipe-models), FLOWRUN
# (a flowrun binary; default: build bin/flowrun), RPACCEL (1 runs part 3,
# about a minute; default 1), LABELS (dataset keys for a harder teacher,
# e.g. "label_offset=-3.5 label_noise=4", the same as the models were
# trained with: scripts/train-recpipe-models.sh LABELS). Writes OUT/quality-*.json (flowrun run
# --out), OUT/search.json and search.txt (flowrun search), OUT/rpaccel.txt,
# and prints the tables.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-bench-out/recpipe-paper}
queries=${QUERIES:-64}
models=${MODELS:-bench-out/recpipe-models}
if [[ -z ${FLOWRUN:-} ]]; then
	go build -o bin/flowrun ./cmd/flowrun
	FLOWRUN=bin/flowrun
fi
mkdir -p "$out"
for p in rmsmall rmmed rmlarge; do
	if [[ ! -d $models/$p ]]; then
		FLOWRUN=$FLOWRUN LABELS=${LABELS:-} scripts/train-recpipe-models.sh "$models"
		break
	fi
done

ckpt=(--set "models.large.checkpoint=$models/rmlarge" --set "dataset.eval_batches=$queries")
labels=()
for kv in ${LABELS:-}; do
	labels+=(--set "dataset.$kv")
done
ckpt+=(${labels[@]+"${labels[@]}"})
# Every quality run also replays its queries' modeled demands on RecPipe's
# CPU server (cascade-lake: 64 servers, one core each) at 500 QPS (Fig. 7)
# and at 70 and 200.
cpu=(--set devices.host.options.profile=cascade-lake --set serving.qps=500 --set 'serving.sweep_qps=[70,200]' --set serving.sla_ms=25)
two=(--set "models.small.checkpoint=$models/rmsmall")
med=(--set models.med.plugin=builtin:dlrm --set models.med.options.preset=rmmed --set models.med.options.optimizer=sgd
	--set models.med.options.learning_rate=0.2 --set models.med.dim=16 --set "models.med.checkpoint=$models/rmmed")

# 1. Quality (measured).
quality() {
	local name=$1 graph=$2
	shift 2
	"$FLOWRUN" run "graphs/$graph.yaml" -q --out "$out/quality-$name.json" "${ckpt[@]}" "${cpu[@]}" "$@"
}
quality 1stage recpipe-1stage-trained
quality 2stage recpipe-2stage-trained "${two[@]}"
quality 3stage recpipe-3stage-trained "${two[@]}" --set "models.med.checkpoint=$models/rmmed"
quality 2stage-k64 recpipe-2stage-trained "${two[@]}" --set stages.keep.k=64
quality 2stage-k1024 recpipe-2stage-trained "${two[@]}" --set stages.keep.k=1024
quality 2stage-k4096 recpipe-2stage-trained "${two[@]}" --set stages.keep.k=4096
quality 2stage-med recpipe-2stage-trained "${two[@]}" "${med[@]}" --set stages.front.model=med
quality 2stage-bucket recpipe-2stage-trained "${two[@]}" --set stages.keep.mode=bucket
quality 2stage-sub4 recpipe-2stage-trained "${two[@]}" --set stages.keep.sub_batches=4

# 2. The device mapping (modeled): each design's stages on the CPU
# (cascade-lake) or on the GPU (t4: tables and model), p99 at 70, 200 and
# 500 QPS. Quality here is from the search's own runs (the graphs' 17
# queries).
"$FLOWRUN" search graphs/recpipe-1stage-trained.yaml graphs/recpipe-2stage-trained.yaml \
	--set "models.large.checkpoint=$models/rmlarge" ${labels[@]+"${labels[@]}"} --sweep "recpipe-2stage-trained:models.small.checkpoint=$models/rmsmall" \
	--set devices.host.options.profile=cascade-lake --set devices.gpu.plugin=builtin:hbm --set devices.gpu.options.profile=t4 \
	--sweep recpipe-1stage-trained:stages.rank.host_device=host,gpu --sweep recpipe-1stage-trained:stages.rank.compute_device=host,gpu \
	--sweep recpipe-2stage-trained:stages.front.host_device=host,gpu --sweep recpipe-2stage-trained:stages.front.compute_device=host,gpu \
	--qps 70,200,500 --sla-ms 25 --targets-ms 25 --out "$out/search.json" >"$out/search.txt"

# 3. RPAccel (modeled).
if [[ ${RPACCEL:-1} == 1 ]]; then
	RPACCEL_HEADLINE=1 go test -count=1 -run Headline -v ./plugins/devices/rpaccel/ >"$out/rpaccel.txt" 2>&1 || {
		cat "$out/rpaccel.txt"
		exit 1
	}
	# The same comparison through the graphs (score sends keys and layer
	# shapes to the device): p99 at 200 and 400 QPS and the loads around
	# each design's 6 ms point.
	"$FLOWRUN" run graphs/recpipe-centaur.yaml -q --out "$out/rpaccel-graph-centaur.json" \
		--set 'serving.sweep_qps=[210,220,230,240,250,260,400]'
	"$FLOWRUN" run graphs/recpipe-rpaccel.yaml -q --out "$out/rpaccel-graph-rpaccel.json" \
		--set 'serving.sweep_qps=[400,1550,1600,1650,1700,1750,1800]'
fi

python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
print("Quality (measured: real scoring of held-out queries by the trained models), NDCG@64 x 100")
print("and p99 in ms on cascade-lake (modeled replay; overload: QPS at or above capacity)")
print(f"{'design':14s} {'queries':>7s} {'NDCG@64':>8s} {'p99@70':>9s} {'p99@200':>9s} {'p99@500':>9s}  frontend's own NDCG (its depth), kept")
for name in ["1stage", "2stage", "3stage", "2stage-k64", "2stage-k1024", "2stage-k4096", "2stage-med", "2stage-bucket", "2stage-sub4"]:
    r = json.load(open(os.path.join(out, f"quality-{name}.json")))
    m = r["metrics"]; x = m.get("extra", {})
    fronts = [f"{k[7:-5]} {100*x[k]:.2f} (@{int(x[k[:-4] + 'ndcg_k'])}), kept {x.get(k[:-4] + 'kept', 0):.0f}"
              for k in sorted(x) if k.startswith("filter.") and k.endswith(".ndcg")]
    sv = r.get("serving", {})
    p99 = {int(round(q["offered_qps"])): q for q in [sv.get("modeled", {})] + sv.get("modeled_sweep", []) if q}
    cell = lambda q: f"{p99[q]['latency_ms']['p99']:9.1f}" if q in p99 and "latency_ms" in p99[q] else f"{'overload':>9s}"
    print(f"{name:14s} {int(x.get('ndcg_queries', 0)):7d} {100*m['ndcg']:8.2f} {cell(70)} {cell(200)} {cell(500)}  {'; '.join(fronts)}")
print()
print(open(os.path.join(out, "search.txt")).read())
p = os.path.join(out, "rpaccel.txt")
if os.path.exists(p):
    print("RPAccel vs the Centaur-like baseline (modeled; plugins/devices/rpaccel headline replay):")
    for line in open(p):
        if "---" in line or line.startswith("=== RUN") or line.startswith("ok") or line.startswith("PASS"):
            continue
        print(line.rstrip())
    print()
    print("The same designs as graphs (modeled p99, ms, by offered QPS):")
    for name in ["centaur", "rpaccel"]:
        r = json.load(open(os.path.join(out, f"rpaccel-graph-{name}.json")))
        sv = r["serving"]
        row = [f"{q['offered_qps']:g}: " + (f"{q['latency_ms']['p99']:.3f}" if "latency_ms" in q else "overload")
               for q in [sv["modeled"]] + sv.get("modeled_sweep", [])]
        print(f"  recpipe-{name}: " + ", ".join(row))
PY
