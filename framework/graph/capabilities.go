package graph

import (
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/cache"
)

// CheckCache checks g against what its cache policy declared of itself
// (sdk/cache.Needs), the checks of ScratchPipe's rules (Sec. IV-C, IV-D)
// that depend on the policy rather than on the stages (Build makes
// those):
//
//   - pipelined with Storage, the policy must hold the pipeline's window
//     (Needs.HoldsWindows): one that does not lets a batch evict slots the
//     batches before it still train on (RAW hazards 2–4);
//   - a policy that never bypasses (Needs.NeverBypasses) must have a
//     Storage that holds the worst case of the window it holds: every
//     lookup of every batch in it a distinct row.
//
// Build cannot make these checks: the policy answers only once opened,
// so the caller asks it (framework/engine) on a graph Build accepted.
// The errors are located with config.At, as Build's own.
func CheckCache(g *Graph, needs cache.Needs) error {
	if !g.UsesStorage() {
		return nil
	}
	cfg := g.Config
	var errs []error
	if cfg.Pipeline == config.Pipelined && !needs.HoldsWindows {
		errs = append(errs, config.At("cache::plugin", fmt.Errorf("%s holds no pipeline window, so it is exact only with pipeline: sequential: pipelined, a batch would evict slots that the batches before it still train on and rows that the batches after it are about to read from the host (ScratchPipe's RAW hazards 2–4); use builtin:scratchpipe (its Hold mask holds the window; options.victim picks lru, lfu or random among the other slots) or builtin:static, or set pipeline: sequential",
			cfg.Cache.Plugin)))
	}
	if needs.NeverBypasses {
		past, future := g.Windows()
		// The policy's own windows, when wider than the pipeline's, are
		// what it holds.
		if err := checkWorstCase(cfg, max(past, needs.Past), max(future, needs.Future)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkWorstCase rejects a Storage smaller than the worst case of the
// window, with the paper's formula in the message.
func checkWorstCase(cfg *config.Config, past, future int) error {
	d := cfg.Dataset
	// With tables of different sizes (dataset.table_rows) every table gets
	// min(capacity, its rows) slots and needs min(worst case, its rows):
	// the largest table is the one that can fall short.
	rows := d.MaxRows()
	w := WorstCase{Tables: d.Tables, Lookups: d.Lookups, BatchSize: d.BatchSize, Dim: d.Dim, Past: past, Future: future, TableRows: rows}
	if d.Tables < 1 || d.Lookups < 1 || d.BatchSize < 1 || rows < 1 || !(cfg.Cache.Size > 0) {
		return nil // config.Validate reported it
	}
	have := cfg.CacheCapacity()
	need := w.Rows()
	if have >= need {
		return nil
	}
	return config.At("cache::size", fmt.Errorf("%s holds %d rows per table, less than the worst case of ScratchPipe's window: tables × lookups × batch × dim × 4 B × batches in window = %s, %d rows per table (lookups %d × batch_size %d × (past_window %d + 1 + future_window %d)); set cache.size ≥ %d (%s of dataset.rows %d)",
		sizeText(cfg.Cache.Size), have, w.Formula(), need, d.Lookups, d.BatchSize, past, future, need, percent(need, rows), rows))
}
