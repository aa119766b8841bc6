package engine

import (
	"fmt"
	"math"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/resources"
)

// Per-part estimates for what the framework cannot size exactly.
const (
	// cacheIndexBytesPerRow is the least a cache policy keeps per slot
	// it may fill: a row→slot map entry and the slot's row (what
	// sdk/cache/plankit.Slots allocates up front for its capacity). A
	// policy's own state per slot comes on top; the budget's margin
	// covers a few bytes more.
	cacheIndexBytesPerRow = 24
	// messageBytes bounds a batch's message on the bus: its header (the
	// refs of its arrays and its stats), held by the NATS server and the
	// subscriber while it is queued.
	messageBytes = 4 << 10
	// timingsPerBatch is the int64s each stage records per batch (wall
	// and modeled time, modeled time by sequence).
	timingsPerBatch = 3
)

// Needs is what a run of g will use at most, part by part, each at the
// key that sizes it (resources.Item): the batch pool (every buffer, since
// a batch may write all of its layout), Storage (filled as the cache
// warms), the host tables' rows that the run's batches can touch
// (min(rows, batches × batch_size × lookups) per table), the cache
// policy's index, the messages the bus queues (credits per edge) and the
// per-batch timings. Nothing is created.
func Needs(g *graph.Graph, shape *Shape) []resources.Item {
	cfg := g.Config
	d := cfg.Dataset
	rows := d.AllRows()
	batches := int64(d.Batches) + int64(d.EvalBatches)
	touched := mulSat(batches, int64(d.BatchSize), int64(d.Lookups))
	rowsKey := "dataset::rows"
	if len(d.TableRows) > 0 {
		rowsKey = "dataset::table_rows"
	}
	tablesKey := rowsKey
	if touched < d.MaxRows() {
		tablesKey = "dataset::batches"
	}
	_, future := g.Windows()
	buffers := poolBuffers(cfg, len(g.Nodes), future)
	slots := make([]int64, len(rows))
	for t, r := range rows {
		slots[t] = min(r, cfg.CacheCapacity())
	}
	var indexRows, edges int64
	for _, s := range slots {
		indexRows += s
	}
	for _, n := range g.Nodes {
		if n.In != "" {
			edges++
		}
	}
	tablesTouched := batch.TablesTouchedBytes(rows, touched, shape.Stride)
	need := []resources.Item{
		{Key: "dataset::batch_size", What: fmt.Sprintf("batch pool (%d buffers × %s)", buffers, fb(shape.Layout.Size)),
			Bytes: shape.Layout.PoolBytes(buffers), Shared: true},
		{Key: tablesKey, What: fmt.Sprintf("host tables' touched rows (%d tables × at most min(rows, %d) rows × %d B)", len(rows), touched, shape.Stride*4),
			Bytes: tablesTouched, Shared: cfg.Embedding.TablesDir == "", Dir: cfg.Embedding.TablesDir},
		// The rest of the tables is mapped but never written, as are the
		// bitmaps' words of rows never touched: address space only.
		{Key: rowsKey, What: "host tables' untouched rows and touched-row bitmaps (mapped, a bit per row)",
			Virtual: batch.TablesVirtualBytes(rows, shape.Stride) - tablesTouched + batch.TablesBitmapBytes(rows)},
		{Key: "cache::size", What: fmt.Sprintf("cache policy's index (%d slots × %d B)", indexRows, cacheIndexBytesPerRow),
			Bytes: indexRows * cacheIndexBytesPerRow},
		{Key: "nats::credits", What: fmt.Sprintf("queued messages (%d edges × %d)", edges, cfg.NATS.Credits+1),
			Bytes: edges * int64(cfg.NATS.Credits+1) * messageBytes},
		{Key: "dataset::batches", What: fmt.Sprintf("per-batch timings (%d stages × %d batches)", len(g.Nodes), batches),
			Bytes: mulSat(int64(len(g.Nodes)), batches, timingsPerBatch*8)},
	}
	need = append(need, modelNeeds(cfg, rows, touched)...)
	if g.UsesStorage() {
		shared, process := batch.StorageBytes(slots, shape.Stride)
		need = append(need,
			resources.Item{Key: "cache::size", What: fmt.Sprintf("Storage (%d slots × %d B)", indexRows, shape.Stride*4), Bytes: shared, Shared: true},
			resources.Item{Key: "cache::size", What: "Storage's slot→row map (8 B a slot)", Bytes: process})
	}
	return need
}

// CheckResources refuses, before anything is created, a graph whose
// Needs exceed budget (resources.Check), each error at its key.
func CheckResources(g *graph.Graph, shape *Shape, budget resources.Budget) error {
	return resources.Check(Needs(g, shape), budget)
}

// mulSat multiplies factors ≥ 0, saturating at MaxInt64: dataset.batches
// has no bound of its own, and a product past int64 is refused anyway.
func mulSat(factors ...int64) int64 {
	n := int64(1)
	for _, f := range factors {
		if f != 0 && n > math.MaxInt64/f {
			return math.MaxInt64
		}
		n *= f
	}
	return n
}

func fb(n int64) string { return config.FormatBytes(float64(n)) }
