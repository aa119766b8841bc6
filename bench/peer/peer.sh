#!/usr/bin/env bash
# peer.sh trains the same DLRM in flowrun and in PyTorch, alternating the
# two PAIRS times in one loop, and prints per pair flowrun's train-stage p50
# against torch's median step, their ratio, and the per-component split
# (flowrun's gather / mlp / scatter per batch from results.json's
# primitives; torch's gather / dense fwd+bwd / update).
#
#   bench/peer/peer.sh [small|scratchpipe] [THREADS] [PAIRS] [BATCHES]
#     small        graphs/no-cache.yaml as shipped: 8 × 500 000 × 16,
#                  8 lookups, batch 512, bottom 13-64-32-16, top
#                  52-128-128-64-32-1 (default)
#     scratchpipe  the scratchpipe preset: dim 128, 20 lookups, batch 2048,
#                  bottom 13-512-256-128, top 164-1024-1024-512-256-1
#     THREADS      the model's and the kernel's threads (the dlrm plugin's
#                  threads and the cpu kernel's workers options,
#                  with GOMAXPROCS one more, for the load stage that makes
#                  the data), torch.set_num_threads and OMP/OpenBLAS
#                  threads for torch (default 1)
#     PAIRS        alternations (default 5); BATCHES per run (default 50)
#   FLOWRUN_PEER_INSTALL=1   apt-get install -y python3-torch first
#   FLOWRUN_PEER_ROWS=N      rows per table in both (default 500 000)
#   FLOWRUN=path             the flowrun binary (default: go build)
#
# Data generation is outside both clocks: flowrun's load stage runs apart
# from its train stage, and the torch script builds every batch before
# timing. Torch runs with OMP_WAIT_POLICY=PASSIVE: on a loaded machine its
# spinning OpenMP threads otherwise collapse.
set -euo pipefail
cd "$(dirname "$0")/../.."
config=${1:-small} threads=${2:-1} pairs=${3:-5} batches=${4:-50}
rows=${FLOWRUN_PEER_ROWS:-500000}
py=/usr/bin/python3
if [[ ${FLOWRUN_PEER_INSTALL:-0} == 1 ]]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y python3-torch >/dev/null
fi
if ! "$py" -c 'import torch' 2>/dev/null; then
	echo "peer.sh: $py has no torch; run with FLOWRUN_PEER_INSTALL=1 (apt-get install python3-torch)" >&2
	exit 2
fi
flowrun=${FLOWRUN:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -z $flowrun ]]; then
	go build -o "$tmp/flowrun" ./cmd/flowrun
	flowrun=$tmp/flowrun
fi
sets=(--set "dataset.batches=$batches" --set dataset.eval_batches=0 --set "dataset.rows=$rows"
	--set "model.options.threads=$threads" --set "kernel.options.workers=$threads")
targs=(--batches "$batches" --rows "$rows" --threads "$threads")
case $config in
small) ;;
scratchpipe)
	sets+=(--set model.options.preset=scratchpipe --set dataset.dim=128 --set dataset.lookups=20 --set dataset.batch_size=2048)
	targs+=(--dim 128 --lookups 20 --batch 2048 --bottom 512,256,128 --top 1024,1024,512,256,1)
	;;
*)
	echo "peer.sh: unknown config $config (small or scratchpipe)" >&2
	exit 2
	;;
esac
printf '%-5s %10s %10s %6s   %-26s %s\n' pair flowrun_ms torch_ms ratio "flowrun gather/mlp/scatter" "torch gather/dense/update"
for p in $(seq "$pairs"); do
	GOMAXPROCS=$((threads + 1)) "$flowrun" run graphs/no-cache.yaml "${sets[@]}" --json >"$tmp/f.json" 2>/dev/null
	OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
		"$py" bench/peer/dlrm_torch.py "${targs[@]}" >"$tmp/t.json"
	"$py" - "$p" "$tmp/f.json" "$tmp/t.json" <<'PY' | tee -a "$tmp/pairs"
import json, sys
p, f, t = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
train = next(s for s in f["stages"] if s["kind"] == "train")
prim = next(x for x in f["primitives"] if x["stage"] == train["name"])
n = prim["batches"]
split = "/".join(f"{prim['wall_ms'][k] / n:.1f}" for k in ("gather", "mlp", "scatter"))
fr = train["wall_ms"]["p50"]
print(f"{p:<5} {fr:10.2f} {t['step_ms']:10.2f} {fr / t['step_ms']:6.2f}   {split:<26} "
      f"{t['gather_ms']:.1f}/{t['dense_ms']:.1f}/{t['update_ms']:.1f}")
PY
done
awk '{ print $4 }' "$tmp/pairs" | sort -g | awk '{ r[NR] = $1 } END { printf "median ratio (flowrun / torch): %.2f over %d pairs\n", (NR % 2 ? r[(NR+1)/2] : (r[NR/2] + r[NR/2+1]) / 2), NR }'
