package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/placement"
	"github.com/flowrun/flowrun/framework/stage"
)

// WorkOptions is what a worker process needs to run its stages of a
// run: flowrun worker.
type WorkOptions struct {
	// Graph is the run's graph, loaded with the run's --set flags: the
	// run refuses a worker whose graph digest differs.
	Graph   *graph.Graph
	Stages  stage.Registry
	Plugins PluginOpener
	// Bus is a connection to the run's NATS server (or cluster).
	Bus            *bus.Conn
	TracerProvider trace.TracerProvider
	Logger         *slog.Logger
	// RunID is the run to join; empty finds the run of this graph.
	RunID string
	// Worker is the worker's name in the graph's placement; its stages
	// are the placement's.
	Worker string
	// Host labels the worker's host where the placement gives it none;
	// empty means the host name.
	Host string
	// Wait bounds finding and joining the run (the run may start later).
	Wait time.Duration
	// Joined, when set, is called with the run's id once the worker has
	// been welcomed.
	Joined func(runID string)
}

// Work runs a worker: it builds the worker's stages (their plugins
// opened in this process), subscribes them to their input subjects,
// joins the run and processes batches until the run ends, then leaves.
// It returns nil when the run completed, the run's failure, a stage's
// error (which the run is told of, and fails with, naming this worker),
// or placement.ErrRunSilent when the run's heartbeat stopped.
func Work(ctx context.Context, opts WorkOptions) error {
	cfg := opts.Graph.Config
	if cfg.Placement == nil {
		return errors.New("the graph has no placement section: a worker runs the stages placement.workers.NAME.stages gives it")
	}
	w, ok := cfg.Placement.Workers[opts.Worker]
	if !ok {
		return fmt.Errorf("the graph's placement has no worker %q (placement.workers)", opts.Worker)
	}
	r := newRun(Options{Graph: opts.Graph, Stages: opts.Stages, Plugins: opts.Plugins, Bus: opts.Bus,
		TracerProvider: opts.TracerProvider, Logger: opts.Logger, RunID: opts.RunID})
	defer r.mapper.Close()
	r.workerStages = make(map[string]bool, len(w.Stages))
	for _, s := range w.Stages {
		r.workerStages[s] = true
	}
	defer r.shutdown(context.WithoutCancel(ctx))
	join := placement.Join{Worker: opts.Worker, Host: w.Host, PID: os.Getpid(), Stages: w.Stages, Lookahead: map[string]int{}}
	if join.Host == "" {
		join.Host = opts.Host
	}
	if join.Host == "" {
		join.Host, _ = os.Hostname()
	}
	var err error
	if join.Digest, err = placement.Digest(cfg); err != nil {
		return err
	}
	if opts.RunID == "" {
		if r.id, err = placement.Find(ctx, opts.Bus, join.Digest, opts.Wait); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	// A worker that cannot build still joins, to fail the run with why.
	buildErr := r.buildWorker(ctx, wctx, join.Lookahead)
	if buildErr != nil {
		join.Error = buildErr.Error()
	}
	r.member, err = r.joinRun(ctx, join, opts.Wait)
	if buildErr != nil {
		return buildErr
	}
	if err != nil {
		return err
	}
	defer r.member.Close()
	if opts.Joined != nil {
		opts.Joined(r.id)
	}
	wg := r.startWorker(wctx, cancel)
	err = r.member.Serve(ctx, func() (json.RawMessage, error) { return r.report(ctx, stopWorkers, wg) })
	stopWorkers()
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// buildWorker builds the worker's part of the run: the data's shape, the
// plugins, its stages (each subscribed to its input subject), and notes
// what each looks ahead.
func (r *run) buildWorker(ctx, wctx context.Context, lookahead map[string]int) error {
	var err error
	if r.shape, err = NewShape(r.opts.Graph); err != nil {
		return err
	}
	if err := r.buildPlugins(ctx); err != nil {
		return err
	}
	if err := r.createStages(ctx); err != nil {
		return err
	}
	for _, n := range r.nodes {
		if la, ok := n.stage.(stage.Lookahead); ok {
			lookahead[n.Name] = la.Lookahead()
		}
		if n.sub, err = r.opts.Bus.Subscribe(wctx, r.subject(n.In), r.opts.Graph.Config.NATS.Credits); err != nil {
			return fmt.Errorf("stage %s: %w", n.id, err)
		}
	}
	return nil
}

// joinRun joins the run; the Welcome sets the run's total and the
// stages' hosts.
func (r *run) joinRun(ctx context.Context, join placement.Join, wait time.Duration) (*placement.Member, error) {
	m, w, err := placement.JoinRun(ctx, r.opts.Bus, r.id, join, wait, r.setCompleted)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.total = w.Total
	r.mu.Unlock()
	r.hosts = w.Hosts
	for _, n := range r.nodes {
		n.modBySeq = make([]int64, r.total)
	}
	if err := r.startTransport(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// startWorker starts a goroutine per stage; a stage's error is told to
// the run and cancels ctx with it.
func (r *run) startWorker(wctx context.Context, cancel context.CancelCauseFunc) *sync.WaitGroup {
	wg := &sync.WaitGroup{}
	for _, n := range r.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.worker(wctx, n); err != nil && wctx.Err() == nil {
				r.member.Fail(err)
				cancel(err)
			}
		}()
	}
	return wg
}

// setCompleted is the run's count of batches that left the graph (a
// sequential graph's lookahead stage waits on it).
func (r *run) setCompleted(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n > r.completed {
		r.completed = n
		close(r.progress)
		r.progress = make(chan struct{})
	}
}

// report stops the stages (every batch has left the graph), finishes
// those that finish, and encodes what each measured.
func (r *run) report(ctx context.Context, stopWorkers func(), wg *sync.WaitGroup) (json.RawMessage, error) {
	stopWorkers()
	wg.Wait()
	for _, n := range r.nodes {
		if f, ok := n.stage.(stage.Finisher); ok {
			if err := f.Finish(ctx); err != nil {
				return nil, &StageError{Stage: n.id, Seq: uint64(r.total), Err: fmt.Errorf("finish: %w", err)}
			}
		}
	}
	wr := newWorkerReport(r.metrics)
	wr.Traffic = r.transport.counts()
	for _, n := range r.nodes {
		wr.Measures[n.id] = n.measuresUpTo(uint64(r.total))
	}
	return json.Marshal(wr)
}
