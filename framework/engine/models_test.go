package engine

import (
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
)

func TestModelSeed(t *testing.T) {
	seen := map[uint64]string{1: "the graph's"}
	for _, name := range []string{"small", "med", "large", "Small"} {
		s := ModelSeed(1, name)
		if other, dup := seen[s]; dup {
			t.Errorf("model %s has %s's seed %d", name, other, s)
		}
		seen[s] = name
		if ModelSeed(1, name) != s || ModelSeed(2, name) == s {
			t.Errorf("model %s: the seed is not a function of the graph's seed and the name", name)
		}
	}
}

// TestModelSetup: a named model is configured with its own dim on every
// table and its own seed; the rest of the run's Setup is the run's.
func TestModelSetup(t *testing.T) {
	cfg := config.Default()
	cfg.Dataset.Dim = 32
	shape, err := NewShape(&graph.Graph{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	run, _ := shape.Setup("r", nil)
	m := config.NamedModel{Plugin: "builtin:dlrm", Dim: 4, Options: map[string]any{"preset": "rmsmall"}}
	got, err := shape.modelSetup("r", "small", m)
	if err != nil {
		t.Fatal(err)
	}
	if got.Seed != ModelSeed(cfg.Seed, "small") || len(got.Tables) != len(run.Tables) || got.BatchSize != run.BatchSize {
		t.Errorf("setup %+v, run's %+v", got, run)
	}
	for i, tab := range got.Tables {
		if tab.Dim != 4 || tab.Rows != run.Tables[i].Rows {
			t.Errorf("table %d: %+v", i, tab)
		}
	}
	tables, err := shape.newModelTables("small", m)
	if err != nil {
		t.Fatal(err)
	}
	defer tables.Close()
	if tables.Dim != 4 || tables.Len() != cfg.Dataset.Tables {
		t.Errorf("tables: dim %d, %d tables", tables.Dim, tables.Len())
	}
}
