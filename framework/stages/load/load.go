// Package load is the source stage: it fills each batch buffer with the
// IDs, bag offsets, dense features and labels of the next batch, made by
// the synthetic generator or read from a batch file (framework/data).
package load

import (
	"context"
	"fmt"
	"sync"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/serving"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
)

type loader struct {
	src         data.Source
	done        func() error // releases src
	train, eval uint64
	tables      *batch.Tables
	layout      *batch.Layout
	metrics     *stage.Metrics
	dsf         dsfCounts
	// pacer releases batches at Poisson arrival times (arrival:
	// poisson); nil releases them as fast as the graph takes them.
	pacer  *serving.Pacer
	pacing serving.Pacing
	warmup uint64
	// link charges the shard traffic of sharded host tables (graph key
	// shards.link), named linkName; nil charges nothing.
	link     device.Device
	linkName string
}

func newLoader(set stage.Settings, cfg *Config) (*loader, error) {
	d := set.Graph.Dataset
	l := &loader{train: uint64(d.Batches), tables: set.Tables, layout: set.Layout, metrics: set.Metrics}
	var err error
	if l.src, l.done, err = data.OpenSource(set.Graph.Seed, d); err != nil {
		return nil, err
	}
	if f, ok := l.src.(*data.File); ok && uint64(d.Batches) > f.TrainBatches() && set.Logger != nil {
		n := f.TrainBatches()
		set.Logger.Info("dataset.batches is more than the file's training batches: going around it again",
			"file", d.Path, "batches", d.Batches, "file_batches", n, "epochs", float64(d.Batches)/float64(n))
	}
	if cfg.Eval {
		l.eval = uint64(d.EvalBatches)
	}
	if sh := set.Graph.Shards; sh != nil && sh.Link != "" {
		if l.link, err = set.Device("shards::link", sh.Link); err != nil {
			return nil, err
		}
		l.linkName = sh.Link
	}
	if cfg.Arrival == ArrivalPoisson {
		l.pacing = serving.Pacing{QPS: cfg.QPS, Seed: set.Graph.Serving.SeedOr(set.Graph.Seed), SLAMs: cfg.SLAMs}
		l.warmup = min(uint64(cfg.Warmup), l.Batches())
		l.pacer = serving.NewPacer(l.pacing.Seed, int(l.Batches()), cfg.QPS)
	}
	return l, nil
}

// Pacing is the arrival rate, the stream's seed and the SLA of a paced
// loader (serving.Paced); a loader that is not paced has rate 0.
func (l *loader) Pacing() serving.Pacing { return l.pacing }

// arrive waits, when batches are paced, until batch b (one query)
// arrives, and records its arrival on it. A batch already due goes at
// once: the graph is behind and the query has queued since its arrival,
// which its latency (completion − arrival) counts. The warm-up batches
// arrive like the others but carry no arrival: the queue they leave
// behind is the measured queries' starting state, as a simulation's
// warm-up period, and their own latencies are not counted.
func (l *loader) arrive(ctx context.Context, b *batch.Batch) error {
	if l.pacer == nil {
		return nil
	}
	at, err := l.pacer.Wait(ctx, int(b.Seq))
	if err != nil {
		return fmt.Errorf("load: arrival of batch %d: %w", b.Seq, err)
	}
	if b.Seq >= l.warmup {
		Arrival.Set(b, at.UnixNano())
	}
	return nil
}

// Batches is the training batches followed by the held-out ones.
func (l *loader) Batches() uint64 { return l.train + l.eval }

// Next fills batch b.Seq: training batches first, then held-out ones.
func (l *loader) Next(ctx context.Context, b *batch.Batch) error {
	if b.Seq >= l.Batches() {
		return fmt.Errorf("batch %d is past the dataset's %d batches", b.Seq, l.Batches())
	}
	if err := l.arrive(ctx, b); err != nil {
		return err
	}
	b.Eval = b.Seq >= l.train
	var a data.Arrays
	var err error
	if a.IDs, err = batch.IDs.View(b); err != nil {
		return err
	}
	if a.Offsets, err = batch.Offsets.View(b); err != nil {
		return err
	}
	if a.Dense, err = batch.Dense.View(b); err != nil {
		return err
	}
	if a.Labels, err = batch.Labels.View(b); err != nil {
		return err
	}
	if err := l.src.Fill(b.Seq, b.Eval, a); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	perTable, err := l.bags(a.IDs, a.Offsets)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if l.tables != nil {
		moved, err := l.tables.TouchBatch(b.Buffer, perTable)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		if err := l.chargeLink(ctx, b, moved); err != nil {
			return err
		}
	}
	Samples.Set(b, int64(len(a.Labels)))
	Lookups.Set(b, int64(len(a.IDs)))
	unique, lookups := l.dsf.count(perTable, !b.Eval)
	DSFUnique.Set(b, unique)
	DSFLookups.Set(b, lookups)
	return nil
}

// chargeLink charges the rows a sharded table moved for the batch on the
// link (modeled): fetched rows in, their IDs and the rows sent back out,
// the two directions of a full-duplex link at once.
func (l *loader) chargeLink(ctx context.Context, b *batch.Batch, m batch.Moved) error {
	if l.link == nil || m.Fetched+m.Returned == 0 {
		return nil
	}
	ns, err := stage.ChargeConcurrent(ctx, b, l.linkName, l.link,
		device.Op{Name: "shard-fetch", Kind: device.Transfer, Bytes: m.In()},
		device.Op{Name: "shard-return", Kind: device.Transfer, Bytes: m.Out()})
	if err != nil {
		return fmt.Errorf("load: shard traffic on %s: %w", l.linkName, err)
	}
	batch.ModeledNs.Set(b, ns)
	return nil
}

// bags is each table's IDs inside its bags. Only those: the rest of the
// array is left over from whichever batch used the buffer before.
//
// The load stage touches them: it initialises the host rows of the
// batch's IDs that no batch named before (the host tables are virtual: a
// row is initialised on first touch). It does so as soon as the batch is
// filled, before any later stage sees it, and that makes it safe under
// pipelining: every earlier batch touched its rows when it was loaded, so
// a row untouched so far is named by no batch in flight and no kernel is
// reading or writing it; a row that is touched keeps its values, which may
// have trained. Initial values depend only on (seed, table, row), so the
// order of first touches changes nothing. Touching the leftover IDs would
// make the touched set depend on the pool.
func (l *loader) bags(ids, offsets []int64) ([][]int64, error) {
	B := int64(l.layout.BatchSize)
	perTable := make([][]int64, l.layout.Tables)
	for t, start := range l.layout.IndexStart()[:l.layout.Tables] {
		off := offsets[int64(t)*(B+1) : int64(t+1)*(B+1)]
		if off[0] < 0 || off[B] < off[0] || start+off[B] > int64(len(ids)) {
			return nil, fmt.Errorf("table %d: bag offsets [%d, %d) outside the batch", t, off[0], off[B])
		}
		perTable[t] = ids[start+off[0] : start+off[B]]
	}
	return perTable, nil
}

// Finish reports DSF's retention over the training batches as run
// metrics (results.json metrics.extra): dsf_ratio, unique rows over
// lookups summed over every batch and table, and dsf_ratio.tN per table.
func (l *loader) Finish(context.Context) error {
	if l.metrics == nil {
		return nil
	}
	for name, v := range l.dsf.ratios() {
		l.metrics.Set(name, v)
	}
	return nil
}

// dsfCounts is HECA's DSF (Sec. 5.2) measured at load: the distinct IDs
// of each table of a batch against its lookups. Downstream stages already
// move each distinct missed row once per batch (collect), so this counts
// what DSF keeps; it does not change what they move.
type dsfCounts struct {
	mu      sync.Mutex
	seen    map[int64]struct{}
	unique  []int64 // [table]: Σ distinct IDs over training batches
	lookups []int64 // [table]: Σ lookups over training batches
}

// count returns the batch's distinct IDs (per table, summed) and its
// lookups, and adds them to the run's totals when train is set.
func (c *dsfCounts) count(perTable [][]int64, train bool) (unique, lookups int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = make(map[int64]struct{})
		c.unique, c.lookups = make([]int64, len(perTable)), make([]int64, len(perTable))
	}
	for t, ids := range perTable {
		clear(c.seen)
		for _, id := range ids {
			c.seen[id] = struct{}{}
		}
		u, n := int64(len(c.seen)), int64(len(ids))
		unique, lookups = unique+u, lookups+n
		if train {
			c.unique[t] += u
			c.lookups[t] += n
		}
	}
	return unique, lookups
}

// ratios is dsf_ratio overall and per table; empty before any training
// batch.
func (c *dsfCounts) ratios() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var u, n int64
	out := map[string]float64{}
	for t := range c.lookups {
		if c.lookups[t] > 0 {
			out[results.MetricDSFRatioOf(t)] = float64(c.unique[t]) / float64(c.lookups[t])
		}
		u, n = u+c.unique[t], n+c.lookups[t]
	}
	if n == 0 {
		return nil
	}
	out[results.MetricDSFRatio] = float64(u) / float64(n)
	return out
}

// Close releases the data source (closes the batch file, if any).
func (l *loader) Close(context.Context) error { return l.done() }

// create builds a load stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) { return newLoader(set, c) }
