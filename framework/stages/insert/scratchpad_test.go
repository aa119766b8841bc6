package insert_test

import (
	"context"
	"errors"
	"slices"
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
	"github.com/flowrun/flowrun/framework/stages/collect"
	"github.com/flowrun/flowrun/framework/stages/exchange"
	"github.com/flowrun/flowrun/framework/stages/filter"
	"github.com/flowrun/flowrun/framework/stages/insert"
	"github.com/flowrun/flowrun/framework/stages/load"
	"github.com/flowrun/flowrun/framework/stages/plan"
	"github.com/flowrun/flowrun/framework/stages/score"
	"github.com/flowrun/flowrun/framework/stages/train"
	"github.com/flowrun/flowrun/plugins/caches/lru"
	"github.com/flowrun/flowrun/plugins/caches/none"
	"github.com/flowrun/flowrun/plugins/devices/cpudram"
	"github.com/flowrun/flowrun/plugins/devices/hbm"
	"github.com/flowrun/flowrun/plugins/kernels/cpu"
	"github.com/flowrun/flowrun/plugins/models/logreg"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// runGraph runs a shipped graph in process, wired as `flowrun run` wires
// it: every stage kind, the built-in plugins, an embedded NATS server.
func runGraph(t *testing.T, path string, sets ...string) (*results.Results, error) {
	t.Helper()
	kinds, err := stage.NewRegistry(load.NewFactory(), plan.NewFactory(), collect.NewFactory(),
		exchange.NewFactory(), insert.NewFactory(), train.NewFactory(), cast.NewFactory(),
		score.NewFactory(), filter.NewFactory())
	if err != nil {
		t.Fatal(err)
	}
	cfg, src, err := config.Load(path, sets)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(cfg, src, kinds, nil)
	if err != nil {
		t.Fatal(err)
	}
	host, err := pluginhost.New(pluginhost.Settings{Builtins: pluginhost.Builtins{
		Caches:  map[string]func() cache.Cache{"lru": lru.New, "none": none.New},
		Kernels: map[string]func() kernel.Kernel{"cpu": cpu.New},
		Models:  map[string]func() model.Model{"logreg": logreg.New},
		Devices: map[string]func() device.Device{"cpu-dram": cpudram.New, "hbm": hbm.New},
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
	return runtime.Run(context.Background(), runtime.Options{Graph: g, Stages: kinds, Plugins: host, Bus: conn})
}

// The acceptance test of the cache stages: training on rows that travel
// host → Storage → host (plan, collect, exchange, insert, train on Storage
// by slot, write-back of victims and of what is left at the end) ends with
// the model of training on the host tables, bit for bit.
func TestScratchpadDigestEqualsHostTraining(t *testing.T) {
	sets := []string{"dataset.batches=16", "dataset.eval_batches=2", "seed=7"}
	host, err := runGraph(t, "../../../graphs/demo.yaml", sets...)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []string{
		"0.1",  // the graph's own cache: few evictions
		"2048", // exactly one batch's lookups per table: evicts every batch
	} {
		t.Run("cache.size="+size, func(t *testing.T) {
			res, err := runGraph(t, "../../../graphs/demo-scratchpad.yaml", append(sets, "cache.size="+size)...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Digest != host.Digest {
				t.Errorf("digest %s, want demo.yaml's %s", res.Digest, host.Digest)
			}
			if res.Cache == nil || res.Cache.Misses == 0 {
				t.Fatalf("cache stats %+v: the run moved no rows", res.Cache)
			}
			if size == "2048" && res.Cache.Evictions == 0 {
				t.Error("no evictions: the write-back path went untested")
			}
		})
	}
}

// Adagrad keeps its state in the row, after the values: the state must
// travel with the row host → Storage → host (collect, insert, the
// write-back of victims and the final flush) for the cached run to end
// with the host run's digest, state included.
func TestScratchpadCarriesOptimizerState(t *testing.T) {
	base := []string{"dataset.batches=8", "dataset.eval_batches=0", "seed=7"}
	sgd, err := runGraph(t, "../../../graphs/demo.yaml", base...)
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []string{"adagrad", "rowwise_adagrad"} {
		t.Run(opt, func(t *testing.T) {
			sets := append(slices.Clone(base), "embedding.optimizer="+opt)
			host, err := runGraph(t, "../../../graphs/demo.yaml", sets...)
			if errors.Is(err, plugin.ErrUnsupported) {
				t.Skipf("the cpu kernel does not apply %s yet: %v", opt, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if host.Digest == sgd.Digest {
				t.Fatalf("%s ended with SGD's digest", opt)
			}
			// 2048 rows: one batch's lookups per table, so rows are
			// evicted and come back every batch.
			res, err := runGraph(t, "../../../graphs/demo-scratchpad.yaml", append(sets, "cache.size=2048")...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Cache == nil || res.Cache.Evictions == 0 {
				t.Fatalf("cache stats %+v: no row went back to the host", res.Cache)
			}
			if res.Digest != host.Digest {
				t.Errorf("digest %s, want the host run's %s", res.Digest, host.Digest)
			}
		})
	}
}

func TestScratchpadRejectsACacheSmallerThanABatch(t *testing.T) {
	_, err := runGraph(t, "../../../graphs/demo-scratchpad.yaml", "dataset.batches=2", "dataset.eval_batches=0", "cache.size=1000")
	if err == nil || !strings.Contains(err.Error(), "no Storage slot") || !strings.Contains(err.Error(), "batch 0") {
		t.Fatalf("err = %v, want train to name batch 0 and the missing slot", err)
	}
}
