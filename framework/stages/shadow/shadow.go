// Package shadow is the stage kind that runs what-if cache policies on a
// run's live ID stream: each of its policies sees exactly the plan
// requests the serving policy sees (the same IDs and future windows, in
// sequence order, held-out batches included) on its own cache instance,
// and the stage reports what each would have hit, missed, evicted and
// sent over the link, with the modeled time of that traffic. It moves no
// row and touches no training, and charges nothing to the run's modeled
// clock.
//
// A shadow stage reads the batches plan reads, beside it: the stage that
// feeds plan publishes a second subject the shadow consumes (a fan-out),
// so the serving path never waits for a shadow's plan. It copies each
// batch's IDs into its own ring and releases the batch at once; its
// planner goroutine plans batch b once the future window after b has
// arrived (the last batches with what is left of theirs, as plan's
// lookahead does), up to backlog batches behind the serving path, and
// Finish waits for it, saying how far behind it was. Each policy plans in
// a process of its own (a binary, or a builtin that the runtime's
// pluginhost.BuiltinServer serves, own_process) at niceness nice (19: idle
// CPU only), so that shadows take no CPU the serving path wants.
//
// It imports stage, batch, config, results, pluginhost (WithNice,
// WithOwnProcess) and the SDK, never another stage kind, the graph or the
// engine; its policies come from the runtime's stage.CacheOpener.
package shadow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/region"
)

// policy is one shadow policy: its cache instance, its own output arrays
// and its tallies.
type policy struct {
	cfg            config.Cache
	c              cache.Cache
	rows           int64 // capacity per table
	slots, victims []int64
	hits           []uint8
	slotsRef       region.Ref
	victimsRef     region.Ref
	hitsRef        region.Ref
	seen           []uint32 // per (table, slot): the batch that last filled it
	res            results.Shadow
	linkNs         int64
	wall           time.Duration
}

// pending is a batch whose IDs are in the ring, waiting for its window.
type pending struct {
	seq  uint64
	eval bool
	slot int
}

type shadower struct {
	set      stage.Settings
	cfg      *Config
	link     device.Device
	future   int
	n        int64 // IDs per batch
	offsets  []int64
	mem      *region.Region
	ring     []int64 // backlog+future+1 batches' IDs
	free     chan int
	arrivals chan pending
	done     chan struct{}
	failed   atomic.Pointer[error]
	stop     sync.Once
	stamp    uint32
	rowBytes int64
	policies []*policy
	backlog  int // the ring's batches beyond the window
	// arrived and planned count batches in and out of the ring: their
	// difference at Finish is how far behind the serving path the
	// shadows were.
	arrived, planned atomic.Int64
}

// Process copies b's IDs into a free place of the ring and hands them to
// the shadows' planner, which works beside the serving path: Process
// waits only when the shadows are a whole backlog behind.
func (s *shadower) Process(ctx context.Context, b *batch.Batch) error {
	if err := s.failed.Load(); err != nil {
		return *err
	}
	ids, err := batch.IDs.View(b)
	if err != nil {
		return err
	}
	if int64(len(ids)) != s.n {
		return fmt.Errorf("batch %d has %d IDs, the layout %d", b.Seq, len(ids), s.n)
	}
	var k int
	select {
	case k = <-s.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	copy(s.ring[int64(k)*s.n:int64(k+1)*s.n], ids)
	s.arrived.Add(1)
	s.arrivals <- pending{seq: b.Seq, eval: b.Eval, slot: k}
	return nil
}

// plan is the planner: it plans the oldest batch once its future window
// has arrived, and the last ones with what is left of theirs when the
// arrivals end, as plan does at the end of the run. After an error it
// only frees what arrives.
func (s *shadower) plan(ctx context.Context) {
	defer close(s.done)
	var queue []pending
	head := func() {
		if s.failed.Load() == nil {
			if err := s.planHead(ctx, queue); err != nil {
				s.failed.Store(&err)
			}
		}
		s.planned.Add(1)
		s.free <- queue[0].slot
		queue = queue[1:]
	}
	for p := range s.arrivals {
		queue = append(queue, p)
		if len(queue) > s.future {
			head()
		}
	}
	for len(queue) > 0 {
		head()
	}
}

// end closes the arrivals once and waits for the planner.
func (s *shadower) end() {
	s.stop.Do(func() { close(s.arrivals) })
	<-s.done
}

// Finish waits for the shadows to plan every batch and records every
// policy's figures, with how far behind the serving path they were when
// it ended (the runtime finishes stages once every batch has left the
// graph) and how long the run waited for them.
func (s *shadower) Finish(context.Context) error {
	behind, start := s.arrived.Load()-s.planned.Load(), time.Now()
	s.end()
	drain := float64(time.Since(start).Nanoseconds()) / 1e6
	if err := s.failed.Load(); err != nil {
		return *err
	}
	for _, p := range s.policies {
		r := p.res
		if r.Hits+r.Misses > 0 {
			r.HitRate = float64(r.Hits) / float64(r.Hits+r.Misses)
		}
		r.ModeledLinkMs = float64(p.linkNs) / 1e6
		r.PlanWallMs = float64(p.wall.Nanoseconds()) / 1e6
		r.BehindBatches, r.DrainMs = behind, drain
		s.set.Metrics.AddShadow(r)
	}
	return nil
}

// Close stops the planner and releases the ring and the policies' arrays.
func (s *shadower) Close(context.Context) error {
	s.end()
	return s.mem.Close()
}

func (s *shadower) ringRef(k int) region.Ref {
	return s.mem.Ref().Sub(int64(k)*s.n*8, s.n*8)
}

// planHead sends the oldest queued batch, with the queued batches after it
// as its future window, to every policy.
func (s *shadower) planHead(ctx context.Context, queue []pending) error {
	head := queue[0]
	req := cache.PlanRequest{Seq: head.seq, IDs: s.ringRef(head.slot), TableOffsets: s.offsets}
	for _, w := range queue[1:] {
		req.Future = append(req.Future, cache.Window{Seq: w.seq, IDs: s.ringRef(w.slot)})
	}
	s.stamp++
	// The policies are independent (each its own instance, arrays and
	// tallies; the request's inputs are only read): one goroutine each.
	errs := make([]error, len(s.policies))
	var wg sync.WaitGroup
	for i, p := range s.policies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.planOne(ctx, p, req, head)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// planOne plans head on policy p and tallies it.
func (s *shadower) planOne(ctx context.Context, p *policy, req cache.PlanRequest, head pending) error {
	req.Slots, req.Hits, req.Victims = p.slotsRef, p.hitsRef, p.victimsRef
	start := time.Now()
	res, err := p.c.Plan(ctx, &req)
	p.wall += time.Since(start)
	if err != nil {
		return fmt.Errorf("shadow %s: plan batch %d: %w", p.cfg.Plugin, head.seq, err)
	}
	p.res.Batches++
	if head.eval {
		return nil
	}
	return s.tally(ctx, p, head.seq, res)
}

// tally adds a training batch's outcome to p: its counts, the rows that
// would cross the link and their modeled time on it.
func (s *shadower) tally(ctx context.Context, p *policy, seq uint64, res *cache.PlanResult) error {
	for _, t := range res.Tables {
		p.res.Hits += t.Hits
		p.res.Misses += t.Misses
		p.res.Evictions += t.Evictions
	}
	missed, err := s.placedMisses(p)
	if err != nil {
		return fmt.Errorf("shadow %s: batch %d: %w", p.cfg.Plugin, seq, err)
	}
	toDevice, toHost := missed*s.rowBytes, res.Victims*s.rowBytes
	p.res.LinkBytes["to_device"] += toDevice
	p.res.LinkBytes["to_host"] += toHost
	if s.link == nil {
		return nil
	}
	// Both directions at once, as exchange charges them, but not charged
	// to the batch (stage.Charge would put it on the run's modeled clock).
	each, err := stage.Cost(ctx, seq, s.link,
		device.Op{Name: "rows-to-device", Kind: device.Transfer, Bytes: toDevice},
		device.Op{Name: "victims-to-host", Kind: device.Transfer, Bytes: toHost})
	if err != nil {
		return fmt.Errorf("shadow %s: %w", p.cfg.Plugin, err)
	}
	p.linkNs += slices.Max(each)
	return nil
}

// placedMisses counts the distinct slots the batch fills (a missed row
// placed once per table however often it is looked up): the rows collect
// would stage and exchange send. Bypassed lookups (slot -1) cross nothing.
func (s *shadower) placedMisses(p *policy) (int64, error) {
	var n int64
	for t := 0; t+1 < len(s.offsets); t++ {
		for i := s.offsets[t]; i < s.offsets[t+1]; i++ {
			slot := p.slots[i]
			if p.hits[i] != 0 || slot < 0 {
				continue
			}
			if slot >= p.rows {
				return 0, fmt.Errorf("slot %d of table %d is beyond the cache's %d rows", slot, t, p.rows)
			}
			if k := int64(t)*p.rows + slot; p.seen[k] != s.stamp {
				p.seen[k] = s.stamp
				n++
			}
		}
	}
	return n, nil
}

// create opens every policy through the runtime and lays out the ring and
// the policies' arrays in one shared region their plugins map.
func create(ctx context.Context, set stage.Settings, c *Config) (any, error) {
	if set.OpenCache == nil {
		return nil, errors.New("the runtime opens no cache beside the run's (stage.Settings.OpenCache)")
	}
	link, err := set.Device("device", c.Device)
	if err != nil {
		return nil, err
	}
	s := &shadower{set: set, cfg: c, link: link, offsets: set.Layout.IndexStart(), rowBytes: int64(set.Layout.Stride) * 4}
	s.n = s.offsets[len(s.offsets)-1]
	maxRows := set.Graph.Dataset.MaxRows()
	s.backlog = c.Backlog
	if c.Backlog == DefaultBacklog {
		s.backlog = min(s.backlog, max(1, int(defaultRingBytes/max(8*s.n, 1))))
	}
	if all := set.Graph.Dataset.Batches + set.Graph.Dataset.EvalBatches; all > 0 {
		s.backlog = min(s.backlog, all)
	}
	// A policy in a process of its own (a binary; a builtin with
	// own_process) runs at the stage's niceness.
	open := ctx
	if c.OwnProcess {
		open = pluginhost.WithOwnProcess(open)
	}
	if c.Nice > 0 {
		open = pluginhost.WithNice(open, c.Nice)
	}
	for i, pc := range c.Policies {
		pol, future, err := set.OpenCache(open, pc)
		if err != nil {
			return nil, config.At(fmt.Sprintf("policies%s%d", config.KeyDelimiter, i), err)
		}
		if i > 0 && future != s.future {
			return nil, fmt.Errorf("policies::%d: future window %d, the others' %d", i, future, s.future)
		}
		s.future = future
		rows := min(pc.CacheRows(maxRows), maxRows)
		s.policies = append(s.policies, &policy{cfg: pc, c: pol, rows: rows, seen: make([]uint32, int64(set.Layout.Tables)*rows),
			res: results.Shadow{Stage: set.Name, Plugin: pc.Plugin, Size: pc.Size, Rows: rows, Link: c.Device,
				LinkBytes: map[string]int64{"to_device": 0, "to_host": 0}}})
	}
	if err := s.layout(); err != nil {
		return nil, err
	}
	slots := s.backlog + s.future + 1
	s.free, s.arrivals, s.done = make(chan int, slots), make(chan pending, slots), make(chan struct{})
	for k := range slots {
		s.free <- k
	}
	// The planner outlives the build's context only as the run does: it
	// ends when Finish or Close ends the arrivals.
	go s.plan(context.WithoutCancel(ctx))
	return s, nil
}

// layout makes the region: the ring of backlog+future+1 batches' IDs, then each
// policy's slots, victims (a triple per ID) and hits.
func (s *shadower) layout() error {
	ringBytes := int64(s.backlog+s.future+1) * s.n * 8
	perPolicy := s.n*8 + 3*s.n*8 + (s.n+7)/8*8
	var err error
	if s.mem, err = region.Create("shadow-"+s.set.Name, ringBytes+int64(len(s.policies))*perPolicy); err != nil {
		return err
	}
	all := s.mem.Bytes()
	s.ring = region.Int64s(all[:ringBytes])
	off := ringBytes
	ref := s.mem.Ref()
	for _, p := range s.policies {
		p.slotsRef, p.slots = ref.Sub(off, s.n*8), region.Int64s(all[off:off+s.n*8])
		off += s.n * 8
		p.victimsRef, p.victims = ref.Sub(off, 3*s.n*8), region.Int64s(all[off:off+3*s.n*8])
		off += 3 * s.n * 8
		p.hitsRef, p.hits = ref.Sub(off, s.n), all[off:off+s.n]
		off += (s.n + 7) / 8 * 8
	}
	return nil
}
