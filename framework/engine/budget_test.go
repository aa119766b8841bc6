package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/resources"
)

// probeGraph is the graph of the probe that ate memory without end:
// 8 tables of 10^9 rows, the demo's sizes otherwise (a cache of 5% of
// each table: 4·10^8 slots to index).
const probeGraph = `name: probe
dataset:
  batches: 40
  batch_size: 256
  tables: 8
  rows: 1000000000
  dim: 16
  lookups: 8
  eval_batches: 8
cache:
  size: 0.05
stages:
  gen: {kind: gen, out: [batches]}
  sink: {kind: sink, in: batches}
`

func buildGraph(t *testing.T, doc string) (*graph.Graph, *engine.Shape) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "graph.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, src, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(cfg, src, kinds(t, newRecorder()), nil)
	if err != nil {
		t.Fatal(err)
	}
	shape, err := engine.NewShape(g)
	if err != nil {
		t.Fatal(err)
	}
	return g, shape
}

func total(need []resources.Item) (all, virtual int64) {
	for _, it := range need {
		all += it.Bytes
		virtual += max(it.Bytes, it.Virtual)
	}
	return all, virtual
}

// TestProbeRefusedOnSmallMachine: the probe's graph needs 8.9 GiB for its
// cache index and 3 GiB for the rows its batches can touch, and maps 512
// GB; on a machine of 8 GiB it is refused at
// cache::size, and under a 256 GiB address-space limit at dataset::rows,
// each with the figure, before anything is created.
func TestProbeRefusedOnSmallMachine(t *testing.T) {
	g, shape := buildGraph(t, probeGraph)
	all, virtual := total(engine.Needs(g, shape))
	if want := int64(8)*50_000_000*24 + touchedBound; all < want || all > want+1<<30 {
		t.Errorf("need %d B, want the cache index's and the touched rows' %d B and less than 1 GiB more", all, want)
	}
	err := engine.CheckResources(g, shape, resources.Budget{Memory: 8 << 30, MemoryFrom: "an 8 GiB machine"})
	want := "cache::size: the run needs " + config.FormatBytes(float64(all)) + " of memory, more than the 8 GiB it may use (an 8 GiB machine)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %q", err, want)
	}
	err = engine.CheckResources(g, shape, resources.Budget{AddressSpace: 256 << 30})
	want = "dataset::rows: the run needs " + config.FormatBytes(float64(virtual)) + " of address space"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %q", err, want)
	}
	if virtual < 512e9 {
		t.Errorf("maps %d B, want at least the tables' 512 GB", virtual)
	}
}

// TestJustUnderBudgetAccepted: a graph whose need is exactly the budget
// runs the check clean; a byte less is refused. The budget is injected,
// never this machine's.
func TestJustUnderBudgetAccepted(t *testing.T) {
	g, shape := buildGraph(t, probeGraph)
	all, virtual := total(engine.Needs(g, shape))
	if err := engine.CheckResources(g, shape, resources.Budget{Memory: all, AddressSpace: virtual}); err != nil {
		t.Fatalf("at the budget: %v", err)
	}
	if err := engine.CheckResources(g, shape, resources.Budget{Memory: all - 1}); err == nil {
		t.Fatal("a byte over the budget was accepted")
	}
}

// touchedBound is what the probe's host tables can touch: per table,
// min(rows, (batches+eval_batches) × batch_size × lookups) rows of 16
// float32s, and a 4 KiB page of the compact tables' index for each of
// them (rows spread over a billion-row table share no index page).
const touchedBound = int64(8) * (48*256*8*16*4 + 48*256*8*4096)

// TestTouchedRowsBoundedByBatches: host tables count the rows the run's
// batches can reach, not the table.
func TestTouchedRowsBoundedByBatches(t *testing.T) {
	g, shape := buildGraph(t, probeGraph)
	for _, it := range engine.Needs(g, shape) {
		if strings.HasPrefix(it.What, "host tables' touched rows") {
			if want := touchedBound; it.Bytes != want || it.Key != "dataset::batches" {
				t.Errorf("%s at %s: %d B, want %d at dataset::batches", it.What, it.Key, it.Bytes, want)
			}
			return
		}
	}
	t.Fatal("no host tables in the needs")
}
