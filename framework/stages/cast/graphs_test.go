package cast_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/runtime"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/cast"
	"github.com/flowrun/flowrun/framework/stages/load"
	"github.com/flowrun/flowrun/framework/stages/train"
	"github.com/flowrun/flowrun/plugins/caches/none"
	"github.com/flowrun/flowrun/plugins/devices/cpudram"
	"github.com/flowrun/flowrun/plugins/devices/hbm"
	"github.com/flowrun/flowrun/plugins/devices/nmpdimm"
	"github.com/flowrun/flowrun/plugins/kernels/cpu"
	"github.com/flowrun/flowrun/plugins/models/dlrm"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
)

// runGraph runs a shipped graph in process, wired as `flowrun run` wires
// it, with the stage kinds and built-in plugins these graphs use.
func runGraph(t *testing.T, name string, sets ...string) *results.Results {
	t.Helper()
	kinds, err := stage.NewRegistry(load.NewFactory(), cast.NewFactory(), train.NewFactory())
	if err != nil {
		t.Fatal(err)
	}
	cfg, src, err := config.Load("../../../graphs/"+name+".yaml", sets)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(cfg, src, kinds, nil)
	if err != nil {
		t.Fatal(err)
	}
	host, err := pluginhost.New(pluginhost.Settings{Builtins: pluginhost.Builtins{
		Caches:  map[string]func() cache.Cache{"none": none.New},
		Kernels: map[string]func() kernel.Kernel{"cpu": cpu.New},
		Models:  map[string]func() model.Model{"dlrm": dlrm.New},
		Devices: map[string]func() device.Device{"cpu-dram": cpudram.New, "hbm": hbm.New, "nmp-dimm": nmpdimm.New},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	srv, err := bus.StartEmbedded(bus.ServerOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	conn, err := bus.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := runtime.Run(context.Background(), runtime.Options{Graph: g, Stages: kinds, Plugins: host, Bus: conn})
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
