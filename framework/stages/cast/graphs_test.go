package cast_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/cast"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
	"github.com/flowrun/flowrun/framework/stages/load"
	"github.com/flowrun/flowrun/framework/stages/train"
)

// runGraph runs a shipped graph in process with the stage kinds these
// graphs use, and fails the test if it does not run to the end.
func runGraph(t *testing.T, name string, sets ...string) *results.Results {
	t.Helper()
	kinds, err := stage.NewRegistry(load.NewFactory(), cast.NewFactory(), train.NewFactory())
	if err != nil {
		t.Fatal(err)
	}
	res, err := stagetest.RunGraph(t, kinds, "../../../graphs/"+name+".yaml", engine.HazardsOff, sets...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// The exactness criterion for Tensor Casting: casting (Alg. 2) and the
// casted gather-reduce (Alg. 3) coalesce each row's gradients in the
// (row, position) order expand-coalesce (Alg. 1) does, so Ours(CPU),
// Ours(NMP), and the two baselines run as separate expand-coalesce and
// update calls, end with no-cache's digest (embedding rows with their
// optimizer state, and the dense model) for every seed, locality and
// optimizer.
func TestTensorCastingGraphsEndWithNoCacheDigest(t *testing.T) {
	t.Parallel()
	small := []string{
		"dataset.tables=3", "dataset.rows=20000", "dataset.batch_size=64", "dataset.lookups=4",
		"dataset.dim=8", "dataset.eval_batches=2",
	}
	combos := []struct {
		locality  string
		seed      int
		batches   int
		optimizer string
	}{
		{"high", 1, 5, "sgd"},
		{"zipf", 2, 9, "adagrad"},
		{"low", 3, 7, "rowwise_adagrad"},
		{"random", 4, 4, "sgd"},
	}
	graphs := []string{"no-cache", "tensorcasting", "tensorcasting-nmp", "tensorcasting-baseline-cpu", "tensorcasting-baseline-nmp"}
	for _, c := range combos {
		t.Run(fmt.Sprintf("%s/seed=%d/%s", c.locality, c.seed, c.optimizer), func(t *testing.T) {
			t.Parallel()
			sets := append([]string{
				"dataset.locality=" + c.locality, fmt.Sprintf("seed=%d", c.seed),
				fmt.Sprintf("dataset.batches=%d", c.batches), "embedding.optimizer=" + c.optimizer,
			}, small...)
			if c.optimizer != "sgd" {
				sets = append(sets, "stages.train.learning_rate=0.05")
			}
			var want string
			for _, g := range graphs {
				res := runGraph(t, g, sets...)
				if g == "no-cache" {
					want = res.Digest
					continue
				}
				if res.Digest != want {
					t.Errorf("%s: digest %s, want no-cache's %s", g, res.Digest, want)
				}
				// Fig. 12's breakdown: the backward coalescing is its own
				// primitive, measured and modeled; Fig. 15's NMP utilisation.
				var train, casting *results.Primitives
				for i, p := range res.Primitives {
					switch p.Stage {
					case "train":
						train = &res.Primitives[i]
					case "cast":
						casting = &res.Primitives[i]
					}
				}
				// Fig. 12's red bar: the casting step, on the GPU.
				if casted := !strings.Contains(g, "baseline"); casted && (casting == nil || casting.WallMs["cast"] <= 0 || casting.ModeledMs["cast"] <= 0 || casting.DeviceBusyMs["gpu"] <= 0) {
					t.Errorf("%s: cast primitives %+v", g, casting)
				}
				if train == nil || train.WallMs["backward"] <= 0 || train.ModeledMs["backward"] <= 0 {
					t.Errorf("%s: primitives %+v", g, res.Primitives)
				} else if u := train.DeviceUtilisation; strings.Contains(g, "nmp") && !(u["nmp"] > 0 && u["nmp"] <= 1) {
					t.Errorf("%s: nmp utilisation %v", g, u)
				}
			}
		})
	}
}
