package graph

import (
	"fmt"
	"math"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/hazard"
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

// RoleKinds is implemented by Kinds that know each kind's role in
// ScratchPipe's hazard model (stage.Registry): the stages whose distances
// set the windows a pipelined graph needs are found by the role their kind
// declares (the reader of Storage slots and host rows, hazard.Collect; the
// writers, hazard.Insert and hazard.Train), never by name.
type RoleKinds interface {
	HazardRole(kind string) hazard.Role
}

// checkScratchpad checks a graph with Storage against the rule of
// ScratchPipe's (Sec. IV-C) that depends on its stages alone: pipelined,
// the windows must cover how far the stages can drift apart. With
// nats.credits c, a batch's collect can run (1+c) batches per stage ahead
// of the train and the insert of earlier batches, so past_window ≥
// (collect→train)·(1+c) and future_window ≥ (collect→insert)·(1+c);
// credits 0 is the paper's lockstep 3 and 2. The rules that depend on
// the cache policy (it holds the windows, it never bypasses) need the
// policy's declared Needs: CheckCache.
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
	if !users || windowed == "" || b.cfg.Pipeline != config.Pipelined || len(order) != len(b.names) {
		return
	}
	past, future := b.options[windowed].(Windowed).Windows()
	b.checkWindows(windowed, past, future)
}

// checkWindows compares the plan's windows with the distances between
// collect and the stages that write what it reads.
func (b *builder) checkWindows(plan string, past, future int) {
	collect := b.stageOfRole(hazard.Collect)
	if collect == "" {
		return
	}
	c := max(b.cfg.NATS.Credits, 0)
	check := func(role hazard.Role, key string, window int, what string) {
		to := b.stageOfRole(role)
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
	check(hazard.Train, "past_window", past, "the train of an earlier batch (RAW hazards 2, 3)")
	check(hazard.Insert, "future_window", future, "the insert that writes back an earlier batch's victims (RAW hazard 4)")
}

// stageOfRole names the first stage whose kind declares role; for the
// trainer, the one that trains on Storage. None when the kinds declare no
// roles.
func (b *builder) stageOfRole(role hazard.Role) string {
	rk, ok := b.kinds.(RoleKinds)
	if !ok {
		return ""
	}
	for _, name := range b.names {
		if rk.HazardRole(b.cfg.Stages[name].Kind) != role {
			continue
		}
		if u, ok := b.options[name].(StorageUser); role == hazard.Train && (!ok || !u.UsesStorage()) {
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

// WorstCase is the scratchpad a policy that never bypasses needs (ScratchPipe
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
