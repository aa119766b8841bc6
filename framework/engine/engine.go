// Package engine runs a built graph, in phases (Run): build (the data's
// Shape, the plugins opened, asked their Needs and configured, the host
// tables, Storage, the stages), start (the batch pool, every stage
// subscribed to its input subject, the workers), wait (each batch tracked
// until every sink has seen it), shutdown in reverse, and results. It owns
// the run's root span, the per-stage span per batch and the stopping
// rules: the first stage error or plugin crash stops the run, naming the
// stage (or plugin), the batch and the cause. Validate is the build's
// checks without its side effects, for flowrun validate.
//
// The engine knows plugins only through sdk/ and PluginOpener, and stage
// kinds only through stage.Registry; it must not name either.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/clock"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/hazard"
	"github.com/flowrun/flowrun/framework/placement"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/telemetry"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/region"
)

// Options is what a run needs besides its graph.
type Options struct {
	Graph *graph.Graph
	// Stages are the stage kinds the graph may use.
	Stages stage.Registry
	// Plugins resolves the graph's plugin references.
	Plugins PluginOpener
	// Bus is a connection to the NATS server that joins the stages.
	Bus *bus.Conn
	// TracerProvider makes the run's spans; nil traces nothing.
	TracerProvider trace.TracerProvider
	Logger         *slog.Logger
	// Progress, when set, is called after every batch that leaves the
	// graph, with the batches done so far and the total (0 while unknown).
	Progress func(done, total int)
	// RunID names the run; empty makes a random one.
	RunID string
	// CheckHazards turns on the run-time check of ScratchPipe's RAW
	// hazards (framework/hazard) in graphs with Storage: a stage that
	// reads a slot or host row an earlier batch has yet to write fails
	// the run with a *StageError wrapping the *hazard.Hazard.
	CheckHazards HazardMode
	// Modeled, when set, is handed the run's modeled timeline (the schedule
	// behind iteration_ms.modeled, every batch's start and end at every
	// stage) and the stages' total lookahead, once the run has ended; it
	// is not called when no stage charged a device. flowrun bench --warmup
	// times the batches after a warm-up on it.
	Modeled func(tl *clock.Timeline, lookahead int)
	// Checkpoint writes checkpoints at batch boundaries, or resumes from
	// one (checkpoint.go).
	Checkpoint CheckpointOptions
	// Record, when set, gets every batch's lookups and plan decisions
	// (record.go): flowrun run --record, flowrun replay's check.
	Record Recorder
	// Host labels the run's host for a graph with a placement (where
	// placement.host is empty); empty means the host name (placed.go).
	Host string
	// WorkerHint, when set, is the command line that starts worker NAME
	// of this run, for the error of a worker that never joined.
	WorkerHint func(worker, runID string) string
	// Tables, when set, is handed the host tables once made, before any
	// stage: sharded tables (framework/shard) make them a staging table.
	Tables func(*batch.Tables) error
}

// StageError is a stage failing on a batch.
type StageError struct {
	Stage string // kind/name
	Seq   uint64
	Err   error
}

func (e *StageError) Error() string {
	return fmt.Sprintf("stage %s failed on batch %d: %v", e.Stage, e.Seq, e.Err)
}

func (e *StageError) Unwrap() error { return e.Err }

// node is a created stage and what the runtime measures of it.
type node struct {
	graph.Node
	id     string
	stage  any
	outs   []string // full subjects
	sub    *bus.Subscription
	wallNs []int64
	modNs  []int64
	// modBySeq is the modeled time per batch sequence, for the modeled
	// clock's schedule (0 where the stage charged nothing).
	modBySeq []int64
	// devBySeq is, per graph device name, the modeled time the stage
	// charged to that device per batch sequence (stage.DeviceStat): how
	// long the modeled clock holds the device (kept by addPrims). Nil for
	// a stage that charged no device.
	devBySeq map[string][]int64
	// prims sums the stage's per-primitive stats over its batches (see
	// isPrimStat); primBatches counts the batches that reported any.
	prims       map[string]int64
	primBatches int
	// remote is the placement's worker that runs the stage (placed.go);
	// "" for a stage of this process. A remote node has no stage here:
	// its measures come from the worker's report, and its lookahead
	// (remoteAhead) from the worker's Join.
	remote      string
	remoteAhead int
}

// lookahead is what the stage holds back (stage.Lookahead), here or on
// its worker.
func (n *node) lookahead() int {
	if la, ok := n.stage.(stage.Lookahead); ok {
		return la.Lookahead()
	}
	return n.remoteAhead
}

// run is the state of one run.
type run struct {
	opts   Options
	id     string
	tracer trace.Tracer
	log    *slog.Logger
	tp     trace.TracerProvider
	nodes  []*node
	sinks  int
	pool   *batch.Pool
	// What the build phase made: the data's shape, the configured
	// plugins and what they are, the host tables, Storage (nil without
	// a stage that uses it).
	shape   *Shape
	plugins stage.Plugins
	uses    []results.PluginUse
	// profileRows are the distinct rows per table of the cache's warm-up
	// profile (nil when it asked for none), for results' cache section.
	profileRows []int64
	// cacheMemory is the cache's memory per table as its policy declared
	// it (Needs.Memory; nil: undeclared), for memory_compression's Eq. 2.
	cacheMemory []cache.TableMemory
	tables      *batch.Tables
	models      []*namedModel // the graph's named models (models.go)
	storage     *batch.Storage
	mapper      region.Mapper
	metrics     *stage.Metrics
	// hazards is the run's hazard checker, nil unless asked for.
	hazards *hazard.Checker
	// served is the measured arrival and completion of paced batches.
	served servedLog
	// ckpt writes checkpoints and resumes; nil when the run does neither.
	ckpt *checkpointer
	// coord admits and watches the placement's workers (placed.go), nil
	// without a placement; member is a worker's side of its run
	// (worker.go), nil in the run's own process.
	coord  *placement.Coordinator
	member *placement.Member
	// workerStages are the stages a worker runs (worker.go); nil in the
	// run's own process.
	workerStages map[string]bool
	// transport carries arrays by value across hosts (transport.go), nil
	// when every stage is in the run's process.
	transport *transport
	// traffic is what crossed each edge by value, from every process
	// (gatherReports).
	traffic map[string]edgeCounts
	// hosts is the host label of every stage when stages are placed,
	// for the data plane's choice per edge (transport.go).
	hosts map[string]string
	// The stage whose batches Options.Record gets (record.go).
	recordOnce    sync.Once
	recordNode    string
	recordPlanned bool

	mu   sync.Mutex
	seen map[uint64]int // sinks that have seen a batch
	// progress is closed and replaced whenever a batch completes, to wake
	// whoever waits for completions (waitCompleted).
	progress chan struct{}
	// batchSpans are the spans of batches in flight, ended at completion.
	batchSpans map[uint64]trace.Span
	completed  int
	total      int // -1 until the source reaches EOF
	done       chan struct{}
	started    time.Time
	// firstDone and lastDone are when the first and the latest batch
	// left the graph: their span over the batches between is the
	// steady-state iteration, start-up and end excluded.
	firstDone, lastDone time.Time
}

// crashGrace is how long a stage error waits for the plugin host to report
// a plugin process that exited. A call to a plugin that was just killed
// fails at once with a bare transport error ("error reading from server:
// EOF"), before the host's watcher notices the exit; the crash, which names
// the plugin, is the cause worth reporting.
const crashGrace = 500 * time.Millisecond

// blameCrash returns err, or, when err is a stage error in a run with
// out-of-process plugins and the host reports a plugin exit within
// crashGrace, that exit followed by the stage error (both reachable with
// errors.As).
func blameCrash(err error, failures <-chan error, uses []results.PluginUse) error {
	var se *StageError
	if failures == nil || !errors.As(err, &se) {
		return err
	}
	remote := false
	for _, u := range uses {
		remote = remote || u.Remote
	}
	if !remote {
		return err
	}
	t := time.NewTimer(crashGrace)
	defer t.Stop()
	select {
	case crash, ok := <-failures:
		if ok && crash != nil {
			return fmt.Errorf("%w; %w", crash, err)
		}
	case <-t.C:
	}
	return err
}

// NewRunID returns a random run id (16 hex digits).
func NewRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// subject is the NATS subject of a graph subject in this run: runs sharing
// an external server never see each other's batches.
func (r *run) subject(name string) string { return "flowrun." + r.id + "." + name }

// complete records that a sink has finished a batch; when every sink has,
// its buffer goes back to the pool.
func (r *run) complete(h *batch.Header) error {
	r.mu.Lock()
	r.seen[h.Seq]++
	last := r.seen[h.Seq] == r.sinks
	if last {
		delete(r.seen, h.Seq)
		r.completed++
		r.lastDone = time.Now()
		if r.completed == 1 {
			r.firstDone = r.lastDone
		}
		close(r.progress)
		r.progress = make(chan struct{})
	}
	done, total := r.completed, r.total
	r.mu.Unlock()
	if !last {
		return nil
	}
	if r.coord != nil {
		r.coord.Completed(done)
	}
	if r.hazards != nil {
		r.hazards.Done(h.Seq)
	}
	r.recordServed(h)
	r.endBatch(h.Seq, nil)
	if err := r.pool.Release(h.Buffer); err != nil {
		return err
	}
	if r.opts.Progress != nil {
		r.opts.Progress(done, max(total, 0))
	}
	r.checkDone()
	return nil
}

// waitCompleted waits until n batches have left the graph, or ctx ends.
func (r *run) waitCompleted(ctx context.Context, n int) error {
	for {
		r.mu.Lock()
		done, wake := r.completed, r.progress
		r.mu.Unlock()
		if done >= n {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *run) checkDone() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.total >= 0 && r.completed == r.total {
		select {
		case <-r.done:
		default:
			close(r.done)
		}
	}
}

func (r *run) spanAttrs(n *node, b *batch.Batch) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String(telemetry.AttrRunID, r.id),
		attribute.String(telemetry.AttrStage, n.Name),
		attribute.String("flowrun.stage.kind", n.Kind),
		attribute.Int64(telemetry.AttrBatchSeq, int64(b.Seq)),
		attribute.Bool("flowrun.batch.eval", b.Eval),
	}
	for _, k := range b.StatNames() {
		attrs = append(attrs, attribute.Int64("flowrun."+k, b.Stats[k]))
	}
	return attrs
}

// process runs one stage on one batch inside the stage's span, a child of
// the batch's span (ctx) linked to the upstream stage's span, and measures
// it. It returns the stage span's context, for the downstream link.
func (r *run) process(ctx context.Context, upstream trace.SpanContext, n *node, b *batch.Batch, work func(context.Context) error) (trace.SpanContext, error) {
	opts := []trace.SpanStartOption{trace.WithAttributes(attribute.Int64(telemetry.AttrBatchSeq, int64(b.Seq)))}
	if upstream.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: upstream,
			Attributes: []attribute.KeyValue{attribute.String("flowrun.link", "upstream stage")}}))
	}
	ctx, span := r.tracer.Start(ctx, n.id, opts...)
	defer span.End()
	// Modeled time is per stage; every other stat travels downstream for
	// the stages that need it (exchange reads plan's misses).
	for k := range b.Stats {
		if k == "modeled_ns" || isPrimStat(k) {
			delete(b.Stats, k)
		}
	}
	start := time.Now()
	err := work(ctx)
	elapsed := time.Since(start)
	n.wallNs = append(n.wallNs, elapsed.Nanoseconds())
	n.addPrims(b)
	if ns, ok := b.Stats["modeled_ns"]; ok {
		n.modNs = append(n.modNs, ns)
		if int(b.Seq) < len(n.modBySeq) {
			n.modBySeq[b.Seq] = ns
		}
	}
	// The stage has made every write it declared for b: the hazard
	// checker retires them before b moves on and the stage takes the next.
	if err == nil && r.hazards != nil {
		r.hazards.Wrote(b.Seq, r.opts.Stages.HazardName(n.Kind))
	}
	if err == nil {
		err = r.checkIn(ctx, n, b.Seq)
	}
	if err == nil {
		err = r.recordBatch(n, b)
	}
	// Attributes cost a slice and a sort of the stats per stage and batch:
	// only for a span that records them.
	if span.IsRecording() {
		span.SetAttributes(r.spanAttrs(n, b)...)
		span.SetAttributes(attribute.Float64("flowrun.wall_ms", float64(elapsed.Nanoseconds())/1e6))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return span.SpanContext(), &StageError{Stage: n.id, Seq: b.Seq, Err: err}
	}
	return span.SpanContext(), nil
}

// upstreamHeader carries the upstream stage span's context across NATS,
// beside the batch span's own traceparent, so each stage span can link to
// the stage it came from.
const upstreamHeader = "flowrun-upstream"

func injectUpstream(sc trace.SpanContext, msg *bus.Message) {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	if tp := c.Get("traceparent"); tp != "" {
		bus.HeaderCarrier(msg.Header).Set(upstreamHeader, tp)
	}
}

func extractUpstream(msg *bus.Message) trace.SpanContext {
	tp := bus.HeaderCarrier(msg.Header).Get(upstreamHeader)
	if tp == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	return trace.SpanContextFromContext(ctx)
}

// forward publishes a processed batch on every output subject of n, or
// completes it if n is a sink. ctx carries the batch's span.
func (r *run) forward(ctx context.Context, stageSpan trace.SpanContext, n *node, b *batch.Batch) error {
	if len(n.outs) == 0 {
		return r.complete(&b.Header)
	}
	wire := r.transport.toWire(b.Header)
	data, err := wire.Marshal()
	if err != nil {
		return err
	}
	for i, out := range n.outs {
		if r.byValue(n.Name, r.consumerOf(n.Out[i])) {
			if err := r.sendArrays(ctx, n.Out[i], b); err != nil {
				return fmt.Errorf("stage %s: %w", n.id, err)
			}
		}
		msg := bus.NewMessage(data)
		bus.Inject(ctx, msg)
		injectUpstream(stageSpan, msg)
		if err := r.opts.Bus.Publish(ctx, out, msg); err != nil {
			return fmt.Errorf("stage %s: publish batch %d to %s: %w", n.id, b.Seq, out, err)
		}
	}
	return nil
}

// startBatch opens the batch's span under the run's root span; it ends when
// every sink has seen the batch, so a pipelined run shows batches
// overlapping in time.
func (r *run) startBatch(ctx context.Context, seq uint64) context.Context {
	ctx, span := r.tracer.Start(ctx, "batch", trace.WithAttributes(
		attribute.Int64(telemetry.AttrBatchSeq, int64(seq)),
		attribute.String(telemetry.AttrRunID, r.id)))
	r.mu.Lock()
	r.batchSpans[seq] = span
	r.mu.Unlock()
	return ctx
}

// endBatch ends a batch's span; err marks a batch the run did not finish.
func (r *run) endBatch(seq uint64, err error) {
	r.mu.Lock()
	span, ok := r.batchSpans[seq]
	delete(r.batchSpans, seq)
	r.mu.Unlock()
	if !ok {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// endBatches ends the spans of batches still in flight when a run stops.
func (r *run) endBatches(err error) {
	r.mu.Lock()
	seqs := make([]uint64, 0, len(r.batchSpans))
	for seq := range r.batchSpans {
		seqs = append(seqs, seq)
	}
	r.mu.Unlock()
	for _, seq := range seqs {
		r.endBatch(seq, err)
	}
}

// source drives a source stage: one buffer per batch from the pool, which
// blocks while the graph is full.
func (r *run) source(ctx context.Context, n *node) error {
	src := n.stage.(stage.Source)
	for seq := r.ckpt.first(); seq < src.Batches(); seq++ {
		if err := r.beforeIssue(ctx, seq); err != nil {
			return err
		}
		h, err := r.pool.Acquire(ctx, seq)
		if err != nil {
			return err
		}
		b := batch.New(h, &r.mapper)
		bctx := r.startBatch(ctx, seq)
		sc, err := r.process(bctx, trace.SpanContext{}, n, b, func(ctx context.Context) error {
			return src.Next(ctx, b)
		})
		trace.SpanFromContext(bctx).SetAttributes(attribute.Bool("flowrun.batch.eval", b.Eval))
		if err != nil {
			return err
		}
		if err := r.forward(bctx, sc, n, b); err != nil {
			return err
		}
	}
	return nil
}

// worker runs a non-source stage over its input subject until the run ends.
func (r *run) worker(ctx context.Context, n *node) error {
	if la, ok := n.stage.(stage.Lookahead); ok && la.Lookahead() > 0 {
		return r.lookaheadWorker(ctx, n, la)
	}
	st := n.stage.(stage.Stage)
	for msg := range n.sub.Messages() {
		in, err := r.receive(ctx, n, msg)
		if err != nil {
			return err
		}
		if err := r.handle(in, n, func(ctx context.Context) error { return st.Process(ctx, in.b) }); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// received is a batch taken off the bus with its trace context.
type received struct {
	b        *batch.Batch
	ctx      context.Context // carries the batch's span
	upstream trace.SpanContext
}

func (r *run) receive(ctx context.Context, n *node, msg *bus.Message) (*received, error) {
	h, err := batch.Unmarshal(msg.Data)
	if err == nil {
		err = r.transport.toLocal(h)
	}
	if err != nil {
		return nil, fmt.Errorf("stage %s: %w", n.id, err)
	}
	// The message's trace context is the batch's span: the stage span is
	// its child, linked to the upstream stage's span.
	return &received{b: batch.New(h, &r.mapper), ctx: bus.Extract(ctx, msg), upstream: extractUpstream(msg)}, nil
}

// handle processes one received batch in its stage span and forwards it.
func (r *run) handle(in *received, n *node, work func(context.Context) error) error {
	sc, err := r.process(in.ctx, in.upstream, n, in.b, work)
	if err != nil {
		return err
	}
	return r.forward(in.ctx, sc, n, in.b)
}

// lookaheadWorker holds each batch until the next Lookahead() batches have
// arrived, or the run has no more, then processes it with them. Batches
// arrive in sequence order (one producer per subject, acked in order).
//
// In a sequential graph the batch pool (one buffer plus the lookahead's)
// keeps one batch past this stage while the source still has batches to
// make; at the end of the run, with every remaining batch already here,
// the worker itself waits for the batch before to leave the graph.
func (r *run) lookaheadWorker(ctx context.Context, n *node, la stage.Lookahead) error {
	ahead := la.Lookahead()
	sequential := r.opts.Graph.Config.Pipeline == config.Sequential
	var queue []*received
	for msg := range n.sub.Messages() {
		in, err := r.receive(ctx, n, msg)
		if err != nil {
			return err
		}
		queue = append(queue, in)
		for len(queue) > 0 {
			head := queue[0]
			want := min(ahead, r.total-1-int(head.b.Seq))
			if len(queue)-1 < want {
				break
			}
			next := make([]*batch.Batch, want)
			for i := range next {
				next[i] = queue[1+i].b
			}
			if sequential {
				if err := r.waitCompleted(ctx, int(head.b.Seq)); err != nil {
					return err
				}
			}
			if err := r.handle(head, n, func(ctx context.Context) error { return la.ProcessAhead(ctx, head.b, next) }); err != nil {
				return err
			}
			queue = queue[1:]
		}
	}
	return ctx.Err()
}
