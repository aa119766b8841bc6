package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/checkpoint"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/telemetry"
	"github.com/flowrun/flowrun/sdk/model"
)

// CheckpointOptions asks a run to write checkpoints, or to resume from
// one (or both: a resumed run may write more).
//
// A checkpoint is taken at a batch boundary k (a multiple of Every, at
// most the training batches): the source stops before issuing batch
// k+L (L the largest lookahead of a stage, plan's future window), every
// other stage finishes batch k−1, and batches 0 … k−1 leave the graph;
// batches k … k+L−1 are then loaded but held, unprocessed, by the stage
// that looks ahead. The run saves what the batches before k made and
// goes on as if nothing happened: checkpointing does not change its
// digest.
type CheckpointOptions struct {
	// Every is the interval in batches; 0 writes none.
	Every uint64
	// Dir is the root the checkpoints go under, each in ckpt-BATCH.
	Dir string
	// Keep is how many checkpoints to keep under Dir (0: 2).
	Keep int
	// Resume, when set, is a verified checkpoint (checkpoint.Open) the
	// run continues from; the run is refused (checkpoint.ErrMismatch)
	// when it is of another graph, seed or config.
	Resume *checkpoint.Checkpoint
	// Written, when set, is called after each checkpoint is written.
	Written func(dir string, batch uint64)
	// SaveModel, when set, is the root a model checkpoint of the run's
	// model goes under at its end (models_checkpoint.go).
	SaveModel string
}

// The parts of a checkpoint the engine writes.
const (
	partRows     = "rows"     // host tables' touched rows, Storage's rows over them
	partModel    = "model"    // the model's model.Stater state
	partMetrics  = "metrics"  // stage.Metrics so far (JSON)
	partMeasures = "measures" // per stage: both clocks per batch so far (JSON)
	partStages   = "stages"   // per stage: its stage.Checkpointer state (JSON)
)

// Identity is the checkpoint identity of a run of g: its graph's stages
// and edges, its seed, and its whole resolved config.
func Identity(g *graph.Graph) (checkpoint.Identity, error) {
	var parts []string
	for _, n := range g.Nodes {
		parts = append(parts, n.Name, n.Kind, n.In, strings.Join(n.Out, ","))
	}
	cfg, err := json.Marshal(g.Config)
	if err != nil {
		return checkpoint.Identity{}, fmt.Errorf("checkpoint: config digest: %w", err)
	}
	return checkpoint.Identity{
		Graph: g.Config.Name, GraphHash: checkpoint.HashOf(parts...), Seed: g.Config.Seed,
		ConfigDigest: checkpoint.HashOf(string(cfg)),
	}, nil
}

// checkpointer is a run's checkpoint state: where it started, the
// boundaries it stops at, and the stages' measures at each.
type checkpointer struct {
	opts  CheckpointOptions
	id    checkpoint.Identity
	start uint64 // the first batch this run issues
	train uint64 // training batches: no boundary past them
	ahead uint64 // the largest lookahead of a stage

	mu    sync.Mutex
	gates map[uint64]*gate
}

// gate collects the stages' check-ins at a boundary: each non-source
// stage, having processed the batch before it, copies its measures here
// (the copy is its own goroutine's; the mutex orders it before the
// source reads it) and the last one opens ready.
type gate struct {
	waiting  int
	measures map[string]measures
	// states are the stage.Checkpointer states, by stage id.
	states map[string][]byte
	ready  chan struct{}
}

// measures is what a stage measured of the batches before a boundary,
// for the results of a resumed run.
type measures struct {
	WallNs      []int64            `json:"wall_ns"`
	ModNs       []int64            `json:"modeled_ns"`
	ModBySeq    []int64            `json:"modeled_by_seq"`
	DevBySeq    map[string][]int64 `json:"device_by_seq,omitempty"`
	Prims       map[string]int64   `json:"primitives,omitempty"`
	PrimBatches int                `json:"primitive_batches"`
}

// newCheckpointer is nil when the run neither writes nor resumes.
func newCheckpointer(opts CheckpointOptions, g *graph.Graph) (*checkpointer, error) {
	if opts.Every == 0 && opts.Resume == nil {
		return nil, nil
	}
	id, err := Identity(g)
	if err != nil {
		return nil, err
	}
	c := &checkpointer{opts: opts, id: id, train: uint64(g.Config.Dataset.Batches), gates: map[uint64]*gate{}}
	if opts.Resume != nil {
		if err := opts.Resume.Identity.Check(id); err != nil {
			return nil, fmt.Errorf("resume from %s: %w", opts.Resume.Dir, err)
		}
		c.start = opts.Resume.Batch
	}
	if c.opts.Keep <= 0 {
		c.opts.Keep = 2
	}
	return c, nil
}

// first is the first batch the source issues.
func (c *checkpointer) first() uint64 {
	if c == nil {
		return 0
	}
	return c.start
}

// boundary says whether the run stops at batch k to checkpoint.
func (c *checkpointer) boundary(k uint64, total int) bool {
	return c != nil && c.opts.Every > 0 && k%c.opts.Every == 0 && k > c.start && k <= c.train &&
		k+c.ahead < uint64(total)
}

func (c *checkpointer) gate(k uint64, stages int) *gate {
	g, ok := c.gates[k]
	if !ok {
		g = &gate{waiting: stages, measures: map[string]measures{}, states: map[string][]byte{}, ready: make(chan struct{})}
		c.gates[k] = g
	}
	return g
}

// checkIn is a stage's hook after it processed batch seq: at the batch
// before a boundary it leaves its measures at the gate (the source's
// too, before it issues the batches a stage looks ahead at).
func (r *run) checkIn(ctx context.Context, n *node, seq uint64) error {
	c := r.ckpt
	if !c.boundary(seq+1, r.total) {
		return nil
	}
	m := n.measuresUpTo(seq + 1)
	var state []byte
	if cp, ok := n.stage.(stage.Checkpointer); ok {
		var err error
		if state, err = cp.Checkpoint(ctx); err != nil {
			return fmt.Errorf("checkpoint at batch %d: %w", seq+1, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.gate(seq+1, len(r.nodes)-r.sources())
	g.measures[n.id] = m
	if state != nil {
		g.states[n.id] = state
	}
	if n.In == "" {
		return nil // the source waits at the gate itself
	}
	if g.waiting--; g.waiting == 0 {
		close(g.ready)
	}
	return nil
}

func (r *run) sources() int {
	k := 0
	for _, n := range r.nodes {
		if n.In == "" {
			k++
		}
	}
	return k
}

// beforeIssue is the source's hook before it issues batch seq: when seq
// is a boundary's k+L, it waits for the stages to drain batch k−1 and
// writes the checkpoint of boundary k.
func (r *run) beforeIssue(ctx context.Context, seq uint64) error {
	c := r.ckpt
	if c == nil || seq < c.ahead || !c.boundary(seq-c.ahead, r.total) {
		return nil
	}
	k := seq - c.ahead
	c.mu.Lock()
	g := c.gate(k, len(r.nodes)-r.sources())
	c.mu.Unlock()
	select {
	case <-g.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := r.waitCompleted(ctx, int(k)); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.gates, k)
	c.mu.Unlock()
	dir, err := r.writeCheckpoint(ctx, k, g)
	if err != nil {
		return fmt.Errorf("checkpoint at batch %d: %w", k, err)
	}
	if c.opts.Written != nil {
		c.opts.Written(dir, k)
	}
	return nil
}

// measuresUpTo copies what n measured of batches before k.
func (n *node) measuresUpTo(k uint64) measures {
	m := measures{WallNs: slices.Clone(n.wallNs), ModNs: slices.Clone(n.modNs),
		ModBySeq: slices.Clone(n.modBySeq[:min(int(k), len(n.modBySeq))]), PrimBatches: n.primBatches}
	if n.prims != nil {
		m.Prims = make(map[string]int64, len(n.prims))
		for key, v := range n.prims {
			m.Prims[key] = v
		}
	}
	if n.devBySeq != nil {
		m.DevBySeq = make(map[string][]int64, len(n.devBySeq))
		for dev, v := range n.devBySeq {
			m.DevBySeq[dev] = slices.Clone(v[:min(int(k), len(v))])
		}
	}
	return m
}

// writeCheckpoint writes boundary k's checkpoint under the root.
func (r *run) writeCheckpoint(ctx context.Context, k uint64, g *gate) (string, error) {
	c := r.ckpt
	ctx, span := r.tracer.Start(ctx, "flowrun.checkpoint", trace.WithAttributes(attribute.Int64(telemetry.AttrBatchSeq, int64(k))))
	defer span.End()
	state, err := model.StateOf(ctx, r.plugins.Model)
	if err != nil {
		return "", err
	}
	series, totals, values := r.metrics.Snapshot()
	met, err := json.Marshal(savedMetrics{Series: series, Totals: totals, Values: values})
	if err != nil {
		return "", err
	}
	mea, err := json.Marshal(g.measures)
	if err != nil {
		return "", err
	}
	states, err := json.Marshal(g.states)
	if err != nil {
		return "", err
	}
	cacheParts, note, err := r.cacheParts(ctx)
	if err != nil {
		return "", err
	}
	m := checkpoint.Manifest{Identity: c.id, Batch: k, Total: uint64(r.total), Written: time.Now().UTC(),
		Notes: map[string]string{"cache": note}}
	if err := r.lowPrecisionResumes(cacheParts); err != nil {
		return "", err
	}
	rows := storageOverlay{tables: r.tables, storage: r.storage}
	dir, err := checkpoint.Write(c.opts.Dir, m, append([]checkpoint.Part{
		{Name: partRows, Write: func(w io.Writer) error { return checkpoint.EncodeRows(w, rows.init()) }},
		{Name: partModel, Write: writeBytes(state)},
		{Name: partMetrics, Write: writeBytes(met)},
		{Name: partMeasures, Write: writeBytes(mea)},
		{Name: partStages, Write: writeBytes(states)},
	}, cacheParts...))
	if err != nil {
		return "", err
	}
	r.log.Info("checkpoint written", "dir", dir, "batch", k)
	return dir, checkpoint.Prune(c.opts.Dir, c.opts.Keep)
}

func writeBytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(b); return err }
}

type savedMetrics struct {
	Series map[string][]stage.Point `json:"series"`
	Totals map[string]float64       `json:"totals"`
	Values map[string]float64       `json:"values"`
}

// storageOverlay is the host tables with the rows Storage holds read from
// Storage, which has their trained values (the host's copies are stale
// until evicted or flushed): the model as it stands, without writing to
// the tables the run goes on with.
type storageOverlay struct {
	tables   *batch.Tables
	storage  *batch.Storage
	resident []map[int64]int64
}

func (s storageOverlay) init() checkpoint.RowSource {
	if s.storage != nil {
		for t := range s.storage.Len() {
			s.resident = append(s.resident, s.storage.ResidentRows(t))
		}
	}
	return s
}

func (s storageOverlay) Tables() int                  { return s.tables.Len() }
func (s storageOverlay) RowBytes(table int) int       { return s.tables.RowBytes(table) }
func (s storageOverlay) TouchedIDs(table int) []int64 { return s.tables.TouchedIDs(table) }

// RowData is a row of an FP32 table as Storage holds it when it does. A
// low-precision table's row is its stored one: putting Storage's FP32 row
// there would round it at the checkpoint, which the uninterrupted run
// never does; Storage's slots, restored with the policy's snapshot, keep
// the FP32 copy (lowPrecisionResumes).
func (s storageOverlay) RowData(table int, id int64) []byte {
	if s.resident != nil && s.tables.Direct(table) {
		if slot, ok := s.resident[table][id]; ok {
			return s.storage.SlotData(table, slot)
		}
	}
	return s.tables.RowData(table, id)
}

// resume puts back what the checkpoint saved, after the build: the host
// rows, the model's state, the cache's snapshot and Storage's slots when
// the policy took one (else both start empty: every row is in the host
// tables, where the cache finds it on its first miss), and the metrics so
// far.
func (r *run) resume(ctx context.Context) error {
	c := r.ckpt
	if c == nil || c.opts.Resume == nil {
		return nil
	}
	ck := c.opts.Resume
	fail := func(err error) error { return fmt.Errorf("resume from %s: %w", ck.Dir, err) }
	if r.hazards != nil {
		// The boundary drained the pipeline: no write is pending. The
		// checker, which follows batches from 0 without a gap, learns
		// that every batch before it has left the graph.
		for seq := range ck.Batch {
			r.hazards.Done(seq)
		}
	}
	rows, _ := ck.Part(partRows)
	err := checkpoint.DecodeRows(rows, func(t, rowBytes int, _ uint64) error {
		if t >= r.tables.Len() || rowBytes != r.tables.RowBytes(t) {
			return fmt.Errorf("%w: table %d's rows are %d bytes, this run's are not", checkpoint.ErrMismatch, t, rowBytes)
		}
		return nil
	}, r.tables.RestoreRow)
	if err != nil {
		return fail(err)
	}
	state, _ := ck.Part(partModel)
	if err := model.SetStateOf(ctx, r.plugins.Model, state); err != nil {
		return fail(err)
	}
	if err := r.restoreCache(ctx, ck); err != nil {
		return fail(err)
	}
	if err := r.restoreStages(ctx, ck); err != nil {
		return fail(err)
	}
	var met savedMetrics
	if err := jsonPart(ck, partMetrics, &met); err != nil {
		return fail(err)
	}
	for name, pts := range met.Series {
		for _, p := range pts {
			r.metrics.Append(name, p.Seq, p.Value)
		}
	}
	for name, v := range met.Totals {
		r.metrics.Add(name, v)
	}
	for name, v := range met.Values {
		r.metrics.Set(name, v)
	}
	r.completed = int(ck.Batch)
	return nil
}

// restoreMeasures gives each stage what it measured before the
// boundary, once start has sized its arrays for the run's batches.
func (r *run) restoreMeasures() error {
	c := r.ckpt
	if c == nil || c.opts.Resume == nil {
		return nil
	}
	ck := c.opts.Resume
	if ck.Total != uint64(r.total) {
		return fmt.Errorf("resume from %s: %w: it is of a run of %d batches, this one has %d", ck.Dir, checkpoint.ErrMismatch, ck.Total, r.total)
	}
	var all map[string]measures
	if err := jsonPart(ck, partMeasures, &all); err != nil {
		return fmt.Errorf("resume from %s: %w", ck.Dir, err)
	}
	for _, n := range r.nodes {
		m, ok := all[n.id]
		if !ok {
			return fmt.Errorf("resume from %s: %w: it has no measures of stage %s", ck.Dir, checkpoint.ErrMismatch, n.id)
		}
		n.setMeasures(m)
	}
	return nil
}

// setMeasures makes m what n measured (a checkpoint's, or a worker's
// report of a remote stage); n.modBySeq is already sized.
func (n *node) setMeasures(m measures) {
	n.wallNs, n.modNs, n.prims, n.primBatches = m.WallNs, m.ModNs, m.Prims, m.PrimBatches
	copy(n.modBySeq, m.ModBySeq)
	for dev, v := range m.DevBySeq {
		if n.devBySeq == nil {
			n.devBySeq = make(map[string][]int64)
		}
		n.devBySeq[dev] = make([]int64, len(n.modBySeq))
		copy(n.devBySeq[dev], v)
	}
}

// startCheckpoints completes the checkpointer once the stages exist: the
// largest lookahead, and the one source it can stop.
func (r *run) startCheckpoints(ctx context.Context) error {
	c := r.ckpt
	if c == nil {
		return nil
	}
	if c.opts.Every > 0 {
		// Fail now, not at the first checkpoint hours in.
		if _, err := model.StateOf(ctx, r.plugins.Model); err != nil {
			return fmt.Errorf("--checkpoint-every: %w", err)
		}
	}
	for _, n := range r.nodes {
		if la, ok := n.stage.(stage.Lookahead); ok {
			c.ahead = max(c.ahead, uint64(max(la.Lookahead(), 0)))
		}
	}
	if c.opts.Every > 0 && r.sources() != 1 {
		return fmt.Errorf("checkpoint: the graph has %d sources; a checkpoint stops one", r.sources())
	}
	return r.restoreMeasures()
}

func jsonPart(ck *checkpoint.Checkpoint, name string, v any) error {
	b, ok := ck.Part(name)
	if !ok {
		return fmt.Errorf("%w: it has no %s part", checkpoint.ErrCorrupt, name)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s: %v", checkpoint.ErrCorrupt, name, err)
	}
	return nil
}

// restoreStages gives each stage.Checkpointer its saved state.
func (r *run) restoreStages(ctx context.Context, ck *checkpoint.Checkpoint) error {
	var states map[string][]byte
	if err := jsonPart(ck, partStages, &states); err != nil {
		return err
	}
	for _, n := range r.nodes {
		cp, ok := n.stage.(stage.Checkpointer)
		if !ok {
			continue
		}
		state, ok := states[n.id]
		if !ok {
			return fmt.Errorf("%w: it has no state of stage %s", checkpoint.ErrMismatch, n.id)
		}
		if err := cp.Restore(ctx, state); err != nil {
			return fmt.Errorf("stage %s: %w", n.id, err)
		}
	}
	return nil
}

// lowPrecisionResumes refuses a checkpoint that could not resume exactly:
// a low-precision table with rows in Storage under a policy that takes no
// snapshot, whose FP32 rows would only survive rounded into the table.
func (r *run) lowPrecisionResumes(cacheParts []checkpoint.Part) error {
	if r.storage == nil || len(cacheParts) > 0 {
		return nil
	}
	for t := range r.tables.Len() {
		if !r.tables.Direct(t) && len(r.storage.ResidentRows(t)) > 0 {
			return fmt.Errorf("checkpoint: host table %d is stored at %v and Storage holds rows of it, but the cache policy takes no snapshot (cache.Snapshotter): those FP32 rows could only be saved rounded, and the resumed run would not be the uninterrupted one", t, r.tables.PrecisionOf(t))
		}
	}
	return nil
}
