package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeTrainedModel trains RMsmall briefly with --save-model, serves
// it from graphs/recpipe-1stage-trained.yaml (its model set to RMsmall at
// dim 4), and refuses the checkpoint for an RMlarge of dim 32 and a
// missing one: one line naming the key and the --set flag, exit 2.
func TestServeTrainedModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rmsmall")
	small := []string{"--set", "dataset.batch_size=256", "--set", "dataset.eval_batches=2"}
	train := runResults(t, filepath.Join(repoGraphs, "recpipe-train.yaml"), append(small,
		"--set", "dataset.batches=4", "--set", "dataset.dim=4", "--set", "model.options.preset=rmsmall",
		"--save-model", dir)...)
	serve := filepath.Join(repoGraphs, "recpipe-1stage-trained.yaml")
	res := runResults(t, serve, append(small, "--set", "models.large.checkpoint="+dir,
		"--set", "models.large.options.preset=rmsmall", "--set", "models.large.dim=4")...)
	if res.Metrics.NDCG == nil || *res.Metrics.NDCG <= 0 {
		t.Errorf("served NDCG %v", res.Metrics.NDCG)
	}
	if train.Digest == "" {
		t.Fatal("no training digest")
	}
	for name, set := range map[string]string{"another dim": dir, "missing": filepath.Join(dir, "none")} {
		r := flowrun(t, append([]string{"run", serve, "-q"}, append(small, "--set", "models.large.checkpoint="+set)...)...)
		var ue usageError
		msg := ""
		if r.err != nil {
			msg = r.err.Error()
		}
		if !errors.As(r.err, &ue) || !strings.Contains(msg, "models::large::checkpoint") ||
			!strings.Contains(msg, "--set models.large.checkpoint=") || strings.Contains(msg, "\n") {
			t.Errorf("%s: err = %v, want a one-line usage error at the key", name, r.err)
		}
	}
}
