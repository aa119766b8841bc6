package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/shard"
)

// shardFlags are flowrun shard's flags.
type shardFlags struct {
	nats      string
	run       string
	index, of int
	idle      time.Duration
	natsAuth  natsAuthFlags
}

func newShardCmd() *cobra.Command {
	var f shardFlags
	cmd := &cobra.Command{
		Use:   "shard --nats URL --index I --of N [--run ID]",
		Short: "Serve one table shard of a run's sharded host tables",
		Long: `flowrun shard owns the rows of every host table that framework/shard's Owner
gives shard I of N (their values and optimizer state) for the run ID, and
answers the run's requests for them on NATS, then leaves when the run
ends (or on SIGINT/SIGTERM). Start N of them on the server the run uses
(flowrun run --nats URL, with shards: {count: N} in the graph). Without
--run a shard serves the first run that configures it, and only that one.

  flowrun shard --nats nats://127.0.0.1:4222 --index 0 --of 3`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runShard(cmd.Context(), f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.nats, "nats", "", "the NATS server `URL` the run uses")
	fs.StringVar(&f.run, "run", "", "serve only the run `ID` (default: the first run that configures this shard)")
	fs.IntVar(&f.index, "index", 0, "this shard's index, 0 to N−1")
	fs.IntVar(&f.of, "of", 1, "the number of shards N")
	fs.DurationVar(&f.idle, "idle", 10*time.Minute, "drop the rows and leave when the run sends nothing this long (a run killed without saying it is done); 0: never")
	f.natsAuth.register(cmd)
	return cmd
}

// runShard serves one shard until a signal.
func runShard(ctx context.Context, f shardFlags) error {
	if f.nats == "" {
		return usageError{errors.New("give --nats")}
	}
	svc, err := shard.NewService(f.index, f.of)
	if err != nil {
		return usageError{err}
	}
	svc.Once, svc.Idle = true, f.idle
	auth, err := f.natsAuth.clientAuth()
	if err != nil {
		return usageError{err}
	}
	conn, err := bus.Connect(f.nats, bus.WithName(fmt.Sprintf("flowrun shard %d/%d", f.index, f.of)), bus.WithAuth(auth))
	if err != nil {
		return err
	}
	defer conn.Close()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return svc.Serve(ctx, conn.NATS(), f.run)
}

// shardSet is a run's table shards as flowrun run sees them: the client,
// and the shards it serves itself when the NATS server is its own.
type shardSet struct {
	client *shard.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup
	log    *slog.Logger
}

// startShards prepares the graph's shards (nil when it has none): with an
// embedded server it serves them in this process (the same digest, not
// the memory split: docs/scale-out.md#sharded-host-tables); with an external one it
// waits until shards.count `flowrun shard` processes answer.
func startShards(ctx context.Context, cfg *config.Config, f runFlags, conn *bus.Conn, runID string, log *slog.Logger) (*shardSet, error) {
	sc := cfg.Shards
	if sc == nil {
		return nil, nil
	}
	if f.ckpt.every != 0 || f.ckpt.dir != "" || f.ckpt.resume != "" || f.ckpt.save != "" {
		return nil, usageError{errors.New("shards: checkpoints and saved models of sharded tables are not supported yet; drop --checkpoint-every, --checkpoint-dir, --resume and --save-model")}
	}
	client, err := shard.NewClient(conn.NATS(), runID, sc.Count, sc.Timeout())
	if err != nil {
		return nil, err
	}
	s := &shardSet{client: client, cancel: func() {}, log: log}
	if f.nats == "" && cfg.NATS.URL == "" {
		sctx, cancel := context.WithCancel(context.Background())
		s.cancel = cancel
		for i := range sc.Count {
			svc, err := shard.NewService(i, sc.Count)
			if err != nil {
				s.stop()
				return nil, err
			}
			s.wg.Go(func() { _ = svc.Serve(sctx, conn.NATS(), runID) })
		}
	} else {
		log.Info("waiting for table shards", "run", runID, "shards", sc.Count, "subject", shard.Subject(runID, 0))
	}
	wctx, cancel := context.WithTimeout(ctx, sc.Wait())
	defer cancel()
	if err := client.Wait(wctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// attach configures the shards for the run's tables and makes the tables
// a staging table over them (engine.Options.Tables).
func (s *shardSet) attach(t *batch.Tables) error {
	rows := make([]int64, t.Len())
	for i := range rows {
		rows[i] = t.RowsOf(i)
	}
	if err := s.client.Configure(t.Seed(), rows, t.Dim, t.Stride); err != nil {
		return fmt.Errorf("shards: %w", err)
	}
	return t.Stage(s.client)
}

// tables is the engine's hook: nil without shards.
func (s *shardSet) tables() func(*batch.Tables) error {
	if s == nil {
		return nil
	}
	return s.attach
}

// report puts what crossed to and from each shard into results.json's
// metrics.extra: shard.I.requests, shard.I.sent_bytes (requests) and
// shard.I.received_bytes (replies), the run's totals.
func (s *shardSet) report(res *results.Results) {
	if s == nil || res == nil {
		return
	}
	if res.Metrics.Extra == nil {
		res.Metrics.Extra = map[string]float64{}
	}
	for i := range s.client.Shards() {
		tr, key := s.client.Traffic(i), fmt.Sprintf("shard.%d.", i)
		res.Metrics.Extra[key+"requests"] = float64(tr.Requests.Load())
		res.Metrics.Extra[key+"sent_bytes"] = float64(tr.Sent.Load())
		res.Metrics.Extra[key+"received_bytes"] = float64(tr.Received.Load())
	}
}

// stop tells the shards the run is over (a `flowrun shard` process
// leaves) and ends those this process serves.
func (s *shardSet) stop() {
	if s == nil {
		return
	}
	for i := range s.client.Shards() {
		tr := s.client.Traffic(i)
		s.log.Info("table shard traffic", "shard", i, "requests", tr.Requests.Load(),
			"sent_bytes", tr.Sent.Load(), "received_bytes", tr.Received.Load())
	}
	_ = s.client.Done()
	s.cancel()
	s.wg.Wait()
}
