#!/usr/bin/env bash
# Trains the two NCF models (builtin:ncf, NeuMF) that
# graphs/recpipe-movielens-{1,2}stage.yaml serve, on the MovieLens-1M-shaped
# synthetic data of graphs/recpipe-movielens-train.yaml (6,040 users,
# 3,952 movies, the teacher of seed 1), and saves each with flowrun run
# --save-model: ncf-large (dim 64, tower 64-32-16) and ncf-small (dim 8,
# tower 8-4). Each trains one pass over BATCHES batches of 1024 (default
# 200), SGD, and scores 8 held-out batches (AUC, log loss in OUT/NAME.json).
#
#   scripts/train-recpipe-movielens-models.sh [OUT]   # default OUT: bench-out/recpipe-movielens-models
#
# Environment: BATCHES (200), FLOWRUN (a flowrun binary; default: build
# bin/flowrun). Writes OUT/NAME/ckpt-N (an older one there is removed
# first) and OUT/NAME.json.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-bench-out/recpipe-movielens-models}
batches=${BATCHES:-200}
if [[ -z ${FLOWRUN:-} ]]; then
	go build -o bin/flowrun ./cmd/flowrun
	FLOWRUN=bin/flowrun
fi
mkdir -p "$out"

train() {
	local name=$1 dim=$2 layers=$3
	rm -rf "${out:?}/$name"
	start=$(date +%s)
	"$FLOWRUN" run graphs/recpipe-movielens-train.yaml -q \
		--set dataset.batches="$batches" --set dataset.dim="$dim" --set "model.options.layers=$layers" \
		--save-model "$out/$name" --out "$out/$name.json"
	python3 - "$out/$name.json" "$name" "$dim" "$(($(date +%s) - start))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["metrics"]
print(f"{sys.argv[2]:9s} dim {sys.argv[3]:>2s}  {r['batches']} batches  held-out AUC {m['auc']:.4f}  "
      f"log loss {m['logloss']:.4f}  accuracy {m['accuracy']:.4f}  digest {r['digest'][:12]}  {sys.argv[4]} s")
PY
}
train ncf-large 64 '[64, 32, 16]'
train ncf-small 8 '[8, 4]'
