package graph

import (
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/cache"
)

// storageOptions is a decoded stage config that works on Storage and
// serves the pipeline's windows.
type storageOptions struct{ past, future int }

func (o storageOptions) UsesStorage() bool           { return true }
func (o storageOptions) Windows() (past, future int) { return o.past, o.future }

// storageGraph is a graph with Storage over ScratchPipe's example: 8
// tables of 10M rows, 20 lookups, batches of 2048, dim 128, windows 3
// and 2.
func storageGraph(pipeline config.Pipeline, size float64) *Graph {
	cfg := config.Default()
	cfg.Pipeline = pipeline
	cfg.Dataset.Tables, cfg.Dataset.Rows, cfg.Dataset.Lookups, cfg.Dataset.BatchSize, cfg.Dataset.Dim = 8, 10_000_000, 20, 2048, 128
	cfg.Cache.Plugin, cfg.Cache.Size = "./my-policy", size
	return &Graph{Config: cfg, Nodes: []Node{{Name: "plan", Kind: "plan", Options: storageOptions{3, 2}}}}
}

// The policy's declared Needs decide the checks, whatever it is called.
func TestCheckCache(t *testing.T) {
	for _, c := range []struct {
		name     string
		pipeline config.Pipeline
		size     float64
		needs    cache.Needs
		want     []string // substrings of the error; none: no error
	}{
		{"holds no window, pipelined", config.Pipelined, 0.5, cache.Needs{},
			[]string{"cache::plugin: ./my-policy holds no pipeline window"}},
		{"holds no window, sequential", config.Sequential, 0.5, cache.Needs{}, nil},
		{"holds the windows", config.Pipelined, 0.01, cache.Needs{HoldsWindows: true}, nil},
		{"never bypasses, below the worst case", config.Pipelined, 0.01, cache.Needs{HoldsWindows: true, NeverBypasses: true},
			[]string{"cache::size", "8 × 20 × 2048 × 128 × 4 B × 6 = 960 MiB", "cache.size ≥ 245760"}},
		{"never bypasses, its own wider window", config.Sequential, 245760, cache.Needs{NeverBypasses: true, Future: 3},
			[]string{"cache::size", "(past_window 3 + 1 + future_window 3)", "cache.size ≥ 286720"}},
		{"never bypasses, the worst case", config.Pipelined, 245760, cache.Needs{HoldsWindows: true, NeverBypasses: true}, nil},
	} {
		err := CheckCache(storageGraph(c.pipeline, c.size), c.needs)
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q in it", c.name, err, w)
			}
		}
	}
	// Without Storage nothing depends on the policy.
	g := storageGraph(config.Pipelined, 0.01)
	g.Nodes = nil
	if err := CheckCache(g, cache.Needs{NeverBypasses: true}); err != nil {
		t.Errorf("no Storage: %v", err)
	}
}
