#!/usr/bin/env bash
# Trains RecPipe's three models (Table 1: RMsmall, RMmed, RMlarge, the dlrm
# presets rmsmall/rmmed/rmlarge at embedding dims 4/16/32) on the
# Criteo-shaped data the recpipe graphs serve (graphs/recpipe-train.yaml:
# the criteo-kaggle profile, 26 fields at Kaggle's cardinalities, one
# lookup each, 13 dense features, the planted teacher of seed 1), and saves
# each trained model with flowrun run --save-model for
# graphs/recpipe-{1,2,3}stage-trained.yaml.
#
# Scaled configuration (minutes on two cores, not the paper's hours): each
# model trains one pass over BATCHES batches of 1024 samples (default 400:
# 409,600 samples, about 1 % of Criteo Kaggle's 45 M), SGD, dense learning
# rate 0.2, embedding learning rate 10 summed over the batch (the dlrm
# graphs' settings, graphs/no-cache.yaml), no cache (every row trains in
# the host tables). Each run also scores the 8 held-out batches (8,192
# samples of the stream the trained graphs draw their queries from): its
# AUC and log loss are in OUT/PRESET.json.
#
#   scripts/train-recpipe-models.sh [OUT]   # default OUT: bench-out/recpipe-models
#
# Environment: BATCHES (400), PRESETS ("rmsmall rmmed rmlarge"), FLOWRUN (a
# flowrun binary; default: build bin/flowrun), LABELS (dataset keys for a
# harder teacher, e.g. "label_offset=-3.5 label_noise=4": framework/data
# README "Labels"; the models must then be served with the same, LABELS of
# scripts/bench-recpipe-paper.sh). Writes OUT/PRESET/ckpt-N (the
# model checkpoint; an older one there is removed first) and OUT/PRESET.json.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-bench-out/recpipe-models}
batches=${BATCHES:-400}
presets=${PRESETS:-rmsmall rmmed rmlarge}
if [[ -z ${FLOWRUN:-} ]]; then
	go build -o bin/flowrun ./cmd/flowrun
	FLOWRUN=bin/flowrun
fi
mkdir -p "$out"
labels=()
for kv in ${LABELS:-}; do
	labels+=(--set "dataset.$kv")
done

dim() {
	case $1 in
	rmsmall) echo 4 ;;
	rmmed) echo 16 ;;
	rmlarge) echo 32 ;;
	*) echo "unknown preset $1 (rmsmall, rmmed, rmlarge)" >&2; exit 2 ;;
	esac
}

for p in $presets; do
	d=$(dim "$p")
	rm -rf "${out:?}/$p"
	start=$(date +%s)
	"$FLOWRUN" run graphs/recpipe-train.yaml -q \
		--set dataset.batches="$batches" --set dataset.dim="$d" --set model.options.preset="$p" \
		${labels[@]+"${labels[@]}"} --save-model "$out/$p" --out "$out/$p.json"
	python3 - "$out/$p.json" "$p" "$d" "$(($(date +%s) - start))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["metrics"]
print(f"{sys.argv[2]:8s} dim {sys.argv[3]:>2s}  {r['batches']} batches  held-out AUC {m['auc']:.4f}  "
      f"log loss {m['logloss']:.4f}  accuracy {m['accuracy']:.4f}  digest {r['digest'][:12]}  {sys.argv[4]} s")
PY
done
