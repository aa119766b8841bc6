package engine

import (
	"encoding/json"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Shape is what a graph's config fixes for every copy of its data: the
// stride of a row, the layout of a batch buffer and the Setup each plugin
// is configured with. A run, flowrun validate and the stage kinds' tests
// (stagetest) all derive it here, once.
type Shape struct {
	Config *config.Config
	// Stride is the float32s of a row: its values, then the optimizer's
	// state. The state lives in each row after its values, so its width
	// fixes the stride of every copy of a row: host tables, Storage and
	// the rows staged between them.
	Stride int
	// Layout places a batch's arrays in one buffer.
	Layout *batch.Layout
}

// NewShape derives the shape of g's data.
func NewShape(g *graph.Graph) (*Shape, error) {
	cfg := g.Config
	_, stride, err := batch.RowStride(cfg.Embedding, cfg.Dataset.Dim)
	if err != nil {
		return nil, err
	}
	layout, err := newLayout(g, stride)
	if err != nil {
		return nil, err
	}
	return &Shape{Config: cfg, Stride: stride, Layout: layout}, nil
}

// newLayout is the one place a run's batch layout is made: the arrays the
// graph's stages declare they produce or consume (graph.Fields), sized for
// the dataset and the row stride, so a buffer holds only what its graph
// uses. A graph with no stages (a stage kind's unit test drives stages by
// hand) gets every array the stage kinds share.
func newLayout(g *graph.Graph, stride int) (*batch.Layout, error) {
	fields := g.Fields()
	if len(g.Nodes) == 0 {
		fields = batch.AllArrays()
	}
	return batch.NewLayoutFor(batch.ShapeOf(g.Config.Dataset, stride), fields)
}

// Setup is the Setup a plugin is configured with: the run's shape and the
// plugin's options (for the cache, with the host's: cacheSetupOptions) as
// JSON.
func (s *Shape) Setup(runID string, options map[string]any) (plugin.Setup, error) {
	raw, err := json.Marshal(options)
	if err != nil {
		return plugin.Setup{}, fmt.Errorf("options: %w", err)
	}
	d := s.Config.Dataset
	tables := make([]plugin.Table, d.Tables)
	for i := range tables {
		tables[i] = plugin.Table{Rows: d.RowsOf(i), Dim: d.Dim}
	}
	return plugin.Setup{
		RunID: runID, Seed: s.Config.Seed, Tables: tables, BatchSize: d.BatchSize,
		Lookups: d.Lookups, DenseFeatures: d.DenseFeatures, Options: raw,
	}, nil
}

// NewTables creates the host embedding tables, initialised from the seed.
func (s *Shape) NewTables() (*batch.Tables, error) {
	d := s.Config.Dataset
	prec, err := batch.PrecisionOf(s.Config.Embedding)
	if err != nil {
		return nil, err
	}
	return batch.NewTablesPrecision(s.Config.Seed, d.AllRows(), d.Dim, s.Stride, prec)
}

// NewStorage creates ScratchPipe's Storage: one table of rows slots per
// embedding table, capped at the table's own rows (a cache policy caps its
// capacity the same way, plankit.Capacity).
func (s *Shape) NewStorage(rows int64) (*batch.Storage, error) {
	d := s.Config.Dataset
	slots := d.AllRows()
	for t := range slots {
		slots[t] = min(slots[t], rows)
	}
	return batch.NewStorageSlots(slots, d.Dim, s.Stride)
}
