package graph

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/flowrun/flowrun/framework/config"
)

// StorageUser is implemented by a decoded stage config whose stage works on
// the device-side cache rows, ScratchPipe's Storage (collect, insert, train
// with source: storage): the runtime then creates Storage.
type StorageUser interface {
	UsesStorage() bool
}

// Windowed is implemented by the decoded config of the stage that serves
// the pipeline's windows to the cache policy (plan): how many batches
// before a batch may still be writing what its collect reads (past), and
// how many later batches' IDs come with its plan request (future).
type Windowed interface {
	Windows() (past, future int)
}

// UsesStorage reports whether some stage works on Storage.
func (g *Graph) UsesStorage() bool {
	for _, n := range g.Nodes {
		if u, ok := n.Options.(StorageUser); ok && u.UsesStorage() {
			return true
		}
	}
	return false
}

// Windows is the pipeline's past and future windows, from the stage that
// serves them (plan); 0, 0 when no stage does.
func (g *Graph) Windows() (past, future int) {
	for _, n := range g.Nodes {
		if w, ok := n.Options.(Windowed); ok {
			return w.Windows()
		}
	}
	return 0, 0
}

// PolicyName is the cache policy a plugin reference names: NAME for
// builtin:NAME, else the binary's base name without its flowrun-cache-
// prefix (./bin/flowrun-cache-scratchpipe is scratchpipe).
func PolicyName(ref string) string {
	if name, ok := strings.CutPrefix(ref, "builtin:"); ok {
		return name
	}
	return strings.TrimPrefix(filepath.Base(ref), "flowrun-cache-")
}

// windowless are the policies that hold no pipeline window: correct only
// when batches go through Storage one at a time (sdk/cache, "Order,
// windows and what the host guarantees").
var windowless = map[string]bool{"lru": true, "lfu": true, "belady": true}

// The stage kinds whose distances set the windows a pipelined graph needs.
const (
	kindCollect = "collect"
	kindInsert  = "insert"
	kindTrain   = "train"
)

// checkScratchpad checks a graph with Storage against ScratchPipe's rules
// (Sec. IV-C, IV-D), before anything runs:
//
//   - pipelined, the cache policy must hold the pipeline's window: lru,
//     lfu and belady do not (RAW hazards 2–4);
//   - pipelined, the windows must cover how far the stages can drift
//     apart: with nats.credits c, a batch's collect can run (1+c) batches
//     per stage ahead of the train and the insert of earlier batches, so
//     past_window ≥ (collect→train)·(1+c) and future_window ≥
//     (collect→insert)·(1+c); credits 0 is the paper's lockstep 3 and 2;
//   - with the scratchpipe policy, which never bypasses, Storage must hold
//     the worst case of the window: every lookup of every batch in it a
//     distinct row.
func (b *builder) checkScratchpad(order []string) {
	users, windowed := false, ""
	for _, name := range b.names {
		if u, ok := b.options[name].(StorageUser); ok {
			users = users || u.UsesStorage()
		}
		if _, ok := b.options[name].(Windowed); ok && windowed == "" {
			windowed = name
		}
	}
	if !users {
		return
	}
	cfg := b.cfg
	policy := PolicyName(cfg.Cache.Plugin)
	past, future := 0, 0
	if windowed != "" {
		past, future = b.options[windowed].(Windowed).Windows()
	}
	if cfg.Pipeline == config.Pipelined {
		if windowless[policy] {
			b.fail("cache::plugin", fmt.Errorf("%s holds no pipeline window, so it is exact only with pipeline: sequential: pipelined, a batch would evict slots that the batches before it still train on and rows that the batches after it are about to read from the host (ScratchPipe's RAW hazards 2–4); use builtin:scratchpipe (its Hold mask holds the window; options.victim picks lru, lfu or random among the other slots) or builtin:static, or set pipeline: sequential",
				cfg.Cache.Plugin))
		}
		if windowed != "" && len(order) == len(b.names) {
			b.checkWindows(windowed, past, future)
		}
	}
	if policy == "scratchpipe" {
		b.checkScratchpadSize(past, future)
	}
}

// checkWindows compares the plan's windows with the distances between
// collect and the stages that write what it reads.
func (b *builder) checkWindows(plan string, past, future int) {
	collect := b.stageOfKind(kindCollect)
	if collect == "" {
		return
	}
	c := max(b.cfg.NATS.Credits, 0)
	check := func(kind, key string, window int, what string) {
		to := b.stageOfKind(kind)
		if to == "" {
			return
		}
		d := b.distance(collect, to)
		if d <= 0 {
			return
		}
		need := d * (1 + c)
		if window >= need {
			return
		}
		how := "ScratchPipe's lockstep pipeline"
		if c > 0 {
			how = fmt.Sprintf("with nats.credits %d each of them can also queue %d batches", c, c)
		}
		b.fail(stagePath(plan, key), fmt.Errorf("must be ≥ %d, got %d: %s is %d stages after %s and %s, so a batch's collect can run %d × (1 + %d) = %d batches ahead of %s; set %s ≥ %d (or nats.credits: 0, the paper's lockstep, where the windows are 3 and 2)",
			need, window, to, d, collect, how, d, c, need, what, key, need))
	}
	check(kindTrain, "past_window", past, "the train of an earlier batch (RAW hazards 2, 3)")
	check(kindInsert, "future_window", future, "the insert that writes back an earlier batch's victims (RAW hazard 4)")
}

// stageOfKind names the first stage of a kind, by name; for train, the one
// that trains on Storage.
func (b *builder) stageOfKind(kind string) string {
	for _, name := range b.names {
		if b.cfg.Stages[name].Kind != kind {
			continue
		}
		if u, ok := b.options[name].(StorageUser); kind == kindTrain && (!ok || !u.UsesStorage()) {
			continue
		}
		return name
	}
	return ""
}

// distance is the number of subjects on the longest path from stage from
// to stage to, over the subjects that are not feedback; 0 when to is not
// downstream of from. The graph is acyclic without feedback (sort checked
// it), so a depth-first search terminates.
func (b *builder) distance(from, to string) int {
	memo := map[string]int{}
	var longest func(s string) int
	longest = func(s string) int {
		if s == to {
			return 0
		}
		if d, ok := memo[s]; ok {
			return d
		}
		best := -1
		for _, out := range b.cfg.Stages[s].Out {
			if b.feedback[out] {
				continue
			}
			for _, c := range b.consumers[out] {
				if d := longest(c.stage); d >= 0 && d+1 > best {
					best = d + 1
				}
			}
		}
		memo[s] = best
		return best
	}
	return max(longest(from), 0)
}

// WorstCase is the scratchpad a scratchpipe cache needs (ScratchPipe
// Sec. IV-D): every lookup of every batch in the window a distinct row.
type WorstCase struct {
	Tables, Lookups, BatchSize, Dim int
	// Past and Future are the windows; the window is Past + 1 + Future
	// batches.
	Past, Future int
	// TableRows caps the rows per table: a table never has more distinct
	// rows than it has.
	TableRows int64
}

// Window is the batches whose rows Storage holds at once.
func (w WorstCase) Window() int { return w.Past + 1 + w.Future }

// Rows is the slots per table the worst case needs.
func (w WorstCase) Rows() int64 {
	n := int64(w.Lookups) * int64(w.BatchSize) * int64(w.Window())
	if w.TableRows > 0 {
		n = min(n, w.TableRows)
	}
	return n
}

// Bytes is the paper's figure: tables × lookups × batch × dim × 4 B ×
// batches in the window (rows capped by the table, values only).
func (w WorstCase) Bytes() float64 {
	return float64(w.Tables) * float64(w.Rows()) * float64(w.Dim) * 4
}

// Formula writes the paper's product with these figures, e.g. "8 × 20 ×
// 2048 × 128 × 4 B × 6 = 960 MiB".
func (w WorstCase) Formula() string {
	if full := int64(w.Lookups) * int64(w.BatchSize) * int64(w.Window()); w.TableRows > 0 && full > w.TableRows {
		// No table has more distinct rows than it has.
		return fmt.Sprintf("%d × %d rows × %d × 4 B = %s (whole tables: %d × %d × %d > dataset.rows)",
			w.Tables, w.TableRows, w.Dim, config.FormatBytes(w.Bytes()), w.Lookups, w.BatchSize, w.Window())
	}
	return fmt.Sprintf("%d × %d × %d × %d × 4 B × %d = %s", w.Tables, w.Lookups, w.BatchSize, w.Dim, w.Window(), config.FormatBytes(w.Bytes()))
}

// checkScratchpadSize rejects a Storage smaller than the worst case of the
// window, with the paper's formula in the message.
func (b *builder) checkScratchpadSize(past, future int) {
	cfg := b.cfg
	d := cfg.Dataset
	// The policy's own windows, when the graph sets them wider than the
	// pipeline's, are what its Hold mask holds.
	if p, ok := intOption(cfg.Cache.Options, "past_window"); ok && p > past {
		past = p
	}
	if f, ok := intOption(cfg.Cache.Options, "future_window"); ok && f > future {
		future = f
	}
	w := WorstCase{Tables: d.Tables, Lookups: d.Lookups, BatchSize: d.BatchSize, Dim: d.Dim, Past: past, Future: future, TableRows: d.Rows}
	if d.Tables < 1 || d.Lookups < 1 || d.BatchSize < 1 || d.Rows < 1 || !(cfg.Cache.Size > 0) {
		return // config.Validate reported it
	}
	have := min(cfg.Cache.CacheRows(d.Rows), d.Rows)
	need := w.Rows()
	if have >= need {
		return
	}
	b.fail("cache::size", fmt.Errorf("%s holds %d rows per table, less than the worst case of ScratchPipe's window: tables × lookups × batch × dim × 4 B × batches in window = %s, %d rows per table (lookups %d × batch_size %d × (past_window %d + 1 + future_window %d)); set cache.size ≥ %d (%s of dataset.rows %d)",
		sizeText(cfg.Cache.Size), have, w.Formula(), need, d.Lookups, d.BatchSize, past, future, need, percent(need, d.Rows), d.Rows))
}

// intOption reads a whole-number option of a plugin's options map.
func intOption(opts map[string]any, key string) (int, bool) {
	switch v := opts[key].(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		if v == math.Trunc(v) {
			return int(v), true
		}
	}
	return 0, false
}

func sizeText(size float64) string {
	if size < 1 {
		return fmt.Sprintf("cache.size %g", size)
	}
	return fmt.Sprintf("cache.size %.0f", size)
}

// percent is need/rows as a percentage, rounded up so that the fraction
// it suggests holds need rows.
func percent(need, rows int64) string {
	p := math.Ceil(float64(need)/float64(rows)*1e4) / 100
	return fmt.Sprintf("%g %%", p)
}
