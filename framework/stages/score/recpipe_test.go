package score_test

import (
	"math"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/filter"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
	"github.com/flowrun/flowrun/framework/stages/load"
	"github.com/flowrun/flowrun/framework/stages/score"
)

func kinds(t *testing.T) stage.Registry {
	t.Helper()
	k, err := stage.NewRegistry(load.NewFactory(), score.NewFactory(), filter.NewFactory())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// small scales the RecPipe graphs down for a test: 3 queries of 512
// candidates.
var small = []string{"dataset.batch_size=512", "dataset.batches=3"}

func runRecPipe(t *testing.T, name string, sets ...string) *results.Results {
	t.Helper()
	res, err := stagetest.RunGraph(t, kinds(t), "../../../graphs/"+name+".yaml", engine.HazardsOff, append(append([]string(nil), small...), sets...)...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func TestRecPipeGraphsValidate(t *testing.T) {
	for _, name := range []string{"recpipe-1stage", "recpipe-2stage", "recpipe-3stage"} {
		if _, err := stagetest.Build(t, kinds(t), "../../../graphs/"+name+".yaml"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A stage naming a model the graph lacks, and a model without a dim,
	// are refused at their keys.
	for set, want := range map[string]string{
		"stages.front.model=tiny": `stages::front::model: "tiny" is not a model of the graph (models: small)`,
		"models.small.dim=0":      "models::small::dim: must be from 1",
	} {
		if _, err := stagetest.Build(t, kinds(t), "../../../graphs/recpipe-2stage.yaml", set); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", set, err, want)
		}
	}
	// A dim that does not match the preset is the plugin's error, at the
	// model's options.
	if _, err := stagetest.Build(t, kinds(t), "../../../graphs/recpipe-2stage.yaml", "models.small.dim=8"); err == nil || !strings.Contains(err.Error(), "models::small::options") {
		t.Errorf("dim 8 for rmsmall: err = %v", err)
	}
}

// TestFrontendKeepingAllIsBackendAlone: a two-stage graph whose frontend
// keeps every candidate serves what the backend alone serves, query by
// query (the same NDCG over the same queries), and one that keeps fewer
// is measured against the whole query too.
func TestFrontendKeepingAllIsBackendAlone(t *testing.T) {
	one := runRecPipe(t, "recpipe-1stage")
	all := runRecPipe(t, "recpipe-2stage", "stages.keep.k=512")
	if one.Metrics.NDCG == nil || all.Metrics.NDCG == nil {
		t.Fatalf("no ndcg: %v / %v", one.Metrics, all.Metrics)
	}
	if *one.Metrics.NDCG != *all.Metrics.NDCG || one.Metrics.Extra["ndcg_queries"] != all.Metrics.Extra["ndcg_queries"] {
		t.Errorf("frontend keeping all: ndcg %v over %v queries, backend alone %v over %v",
			*all.Metrics.NDCG, all.Metrics.Extra["ndcg_queries"], *one.Metrics.NDCG, one.Metrics.Extra["ndcg_queries"])
	}
	if all.Metrics.Extra["filter.keep.kept"] != 512 || all.Metrics.Extra["ndcg_k"] != 64 {
		t.Errorf("extra %v", all.Metrics.Extra)
	}
	// The named model's tables and weights are in the digest.
	if one.Digest == all.Digest {
		t.Error("the two-stage digest does not cover its frontend model")
	}
	// The three-stage funnel runs, and each filter between stages reports
	// under its name.
	three := runRecPipe(t, "recpipe-3stage", "stages.keep.k=256", "stages.narrow.k=128")
	for _, key := range []string{"filter.keep.ndcg", "filter.narrow.ndcg", "ndcg_queries"} {
		if v, ok := three.Metrics.Extra[key]; !ok || math.IsNaN(v) {
			t.Errorf("3-stage: no %s in %v", key, three.Metrics.Extra)
		}
	}
	if three.Metrics.Extra["filter.narrow.kept"] != 128 {
		t.Errorf("3-stage narrow kept %v", three.Metrics.Extra["filter.narrow.kept"])
	}
	// RPAccel's unit between the stages: at least k kept unless short,
	// every short query counted.
	bucket := runRecPipe(t, "recpipe-2stage", "stages.keep.mode=bucket", "stages.keep.sub_batches=4")
	x := bucket.Metrics.Extra
	if _, ok := x["filter.keep.filter_short"]; !ok || (x["filter.keep.filter_short"] == 0 && x["filter.keep.kept"] < 256) {
		t.Errorf("bucket frontend: %v", x)
	}
}
