package hazard

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
)

// WriteSet is the writes one stage makes to one table for one batch:
// the Storage slots it fills or updates, or the host rows it writes back.
type WriteSet struct {
	// Stage is the writing stage's role (string(Insert), string(Train)),
	// or its id "role/name"; Wrote must name the same role.
	Stage string
	Kind  Kind
	Table int
	// Index lists the slots (Kind Slot) or host rows (Kind HostRow)
	// written. Negative entries (a bypassed ID's slot -1) are skipped;
	// duplicates cost nothing.
	Index []int64
	// Rows optionally gives, for slot writes, the row written into each
	// slot (parallel to Index), so that a hazard can name it. nil when
	// unknown.
	Rows []int64
}

// Writes is everything one batch will write further down the pipeline.
type Writes []WriteSet

// maxSlot bounds slot indices: slots are a dense array per table.
const maxSlot = 1 << 31

// maxTables bounds table indices: tables are a dense array of shards.
const maxTables = 1 << 16

// ErrNotInOrder is returned, wrapped, by a strict Checker for a stage its
// pipeline order does not list.
var ErrNotInOrder = errors.New("stage not in the pipeline order")

// Checker tracks, per table, the writes planned batches have yet to make,
// and checks reads against them. All methods are safe for concurrent use
// by the stages' goroutines: each table has its own lock, taken once per
// call for all the indices the call passes, so stages working on
// different tables do not wait for each other.
//
// Each slot or row keeps a 64-bit mask per writing stage of the batches
// with a write pending there, so a read costs O(1) per index whatever
// the number of batches in flight. The price is that a Checker follows at
// most 64 batches with writes tracked at once (Plan says so when a run
// exceeds it; flowrun's runtime keeps far fewer in flight).
type Checker struct {
	// Strict mode; immutable after NewStrict.
	strict bool
	pos    map[string]int // stage kind → position in the pipeline order
	queue  uint64         // batches queued between adjacent stages
	depth  uint64         // 0: unbounded
	window uint64         // the farthest a retained write can still conflict

	mu       sync.Mutex
	stageIDs map[string]uint16
	stages   []string // stage id → kind
	stagePos []int    // stage id → position (strict mode; fixed at NewStrict)
	doneNext uint64   // every batch below it is Done
	doneSet  map[uint64]bool
	retained map[uint64]bool // batches with retained writes (strict)

	// rmu guards the ring: which batch each mask bit stands for, and how
	// many write lists (and Plan calls in progress) still use it. Lock
	// order: a shard's mu, then rmu.
	rmu     sync.Mutex
	used    uint64
	ringSeq [ring]uint64
	ringRef [ring]int

	tmu    sync.RWMutex
	tables []*shard
}

// New returns a Checker that reports a read of anything an earlier batch
// has a write pending to at the moment of the read: the hazards the run's
// actual interleaving produced.
func New() *Checker {
	return &Checker{stageIDs: map[string]uint16{}, doneSet: map[uint64]bool{}, retained: map[uint64]bool{}}
}

// Strict describes the pipeline a strict Checker holds a run to.
type Strict struct {
	// Order lists the pipeline's stage kinds in order, a chain: "load",
	// "plan", "collect", "exchange", "insert", "train". Every stage that
	// writes or reads must be in it.
	Order []string
	// Queue is how many batches may wait between two adjacent stages,
	// besides the one each stage works on: 0 is the paper's lockstep
	// pipeline (Fig. 10); flowrun's runtime queues its NATS credits.
	Queue int
	// Depth, when > 0, is the most batches past the plan stage at once:
	// batch b is planned only once b−Depth has left the graph (the batch
	// pool less the lookahead buffers). 1 is a sequential run.
	Depth int
}

// NewStrict returns a Checker that also reports a read that the run's
// timing happened to save: a write by an earlier batch b', at a stage
// later in the order than the reading stage, that had finished but that
// nothing in the pipeline orders before the read by batch b. Strict mode
// makes a wrong plan fail on every run, not only on the runs whose timing
// exposes it.
//
// With stage k reading and stage k' > k writing, what orders the write
// before the read is the pipeline's capacity: while b is at k, the
// batches ahead of it up to stage k' fit in the stages k+1 … k' (one
// each) and the queues between them (Queue each), so a batch more than
// (k'−k)·(1+Queue) ahead has passed k'; and with a Depth, a batch Depth
// or more ahead has left the graph. The write by b' = b−d is unordered
// when d ≤ (k'−k)·(1+Queue) and, with a Depth, d < Depth.
//
// In the lockstep pipeline that is exactly what the Hold mask's windows
// cover: train−collect = 3 (the past window), insert−collect = 2 (the
// future window). With a queue of c batches the windows must be
// 3·(1+c) and 2·(1+c), or the Depth must be small enough.
//
// Strict mode keeps finished writes until no batch that could conflict
// with them is still in flight, which it learns from Done: the runtime
// must call Done for every batch, and batches must be numbered from 0
// without gaps, as the loader numbers them.
func NewStrict(cfg Strict) (*Checker, error) {
	if len(cfg.Order) == 0 {
		return nil, errors.New("hazard: strict mode needs the pipeline's stage order")
	}
	if cfg.Queue < 0 || cfg.Depth < 0 {
		return nil, fmt.Errorf("hazard: queue %d, depth %d: must be ≥ 0", cfg.Queue, cfg.Depth)
	}
	c := New()
	c.strict = true
	c.queue, c.depth = uint64(cfg.Queue), uint64(cfg.Depth)
	c.pos = make(map[string]int, len(cfg.Order))
	for i, s := range cfg.Order {
		k := stageKind(s)
		if k == "" {
			return nil, fmt.Errorf("hazard: stage order position %d is empty", i)
		}
		if _, dup := c.pos[k]; dup {
			return nil, fmt.Errorf("hazard: stage %q appears twice in the stage order", k)
		}
		c.pos[k] = i
		c.stageIDs[k] = uint16(i)
		c.stages = append(c.stages, k)
		c.stagePos = append(c.stagePos, i)
	}
	c.window = uint64(len(cfg.Order)-1) * (1 + c.queue)
	if c.depth > 0 {
		c.window = min(c.window, c.depth-1)
	}
	if c.window >= ring {
		return nil, fmt.Errorf("hazard: a conflict can span %d batches in this pipeline, more than the %d a Checker follows", c.window, ring)
	}
	return c, nil
}

func (c *Checker) shard(table int) *shard {
	c.tmu.RLock()
	defer c.tmu.RUnlock()
	if table < 0 || table >= len(c.tables) {
		return nil
	}
	return c.tables[table]
}

// shardFor returns table's shard, creating it (and those before it).
func (c *Checker) shardFor(table int) *shard {
	if s := c.shard(table); s != nil {
		return s
	}
	c.tmu.Lock()
	defer c.tmu.Unlock()
	for len(c.tables) <= table {
		c.tables = append(c.tables, newShard(c.strict))
	}
	return c.tables[table]
}

func (c *Checker) allShards() []*shard {
	c.tmu.RLock()
	defer c.tmu.RUnlock()
	return c.tables
}

// stageID interns a stage kind. In strict mode only the order's kinds
// exist.
func (c *Checker) stageID(stage string) (uint16, error) {
	k := stageKind(stage)
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.stageIDs[k]; ok {
		return id, nil
	}
	if c.strict {
		return 0, fmt.Errorf("hazard: stage %q: %w", k, ErrNotInOrder)
	}
	if len(c.stages) >= 1<<15 {
		return 0, errors.New("hazard: too many stages")
	}
	id := uint16(len(c.stages))
	c.stageIDs[k] = id
	c.stages = append(c.stages, k)
	return id, nil
}

func (c *Checker) stageName(id uint16) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stages[id]
}

// claim takes batch seq's ring position for a Plan call in progress.
func (c *Checker) claim(seq uint64) error {
	p := seq % ring
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.used&(1<<p) != 0 && c.ringSeq[p] != seq {
		return fmt.Errorf("hazard: plan batch %d: batch %d still has writes tracked; a Checker follows at most %d batches at once", seq, c.ringSeq[p], ring)
	}
	c.used |= 1 << p
	c.ringSeq[p] = seq
	c.ringRef[p]++
	return nil
}

// unref drops n references to seq's ring position, freeing it at zero.
func (c *Checker) unref(seq uint64, n int) {
	if n == 0 {
		return
	}
	p := seq % ring
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.used&(1<<p) == 0 || c.ringSeq[p] != seq {
		return
	}
	if c.ringRef[p] -= n; c.ringRef[p] <= 0 {
		c.ringRef[p] = 0
		c.used &^= 1 << p
	}
}

func (c *Checker) ref(seq uint64) {
	c.rmu.Lock()
	c.ringRef[seq%ring]++
	c.rmu.Unlock()
}

// Plan declares the writes batch seq will make further down the pipeline.
// The plan stage calls it right after planning the batch, before passing
// it on, so that every read by a later batch is checked against it. Plan
// copies what it keeps: the slices may be reused as soon as it returns.
// It rejects a malformed declaration before recording any of it.
func (c *Checker) Plan(seq uint64, w Writes) error {
	ids := make([]uint16, len(w))
	for i, ws := range w {
		switch {
		case ws.Kind != Slot && ws.Kind != HostRow:
			return fmt.Errorf("hazard: plan batch %d: write set %d: unknown kind %d", seq, i, ws.Kind)
		case ws.Table < 0 || ws.Table >= maxTables:
			return fmt.Errorf("hazard: plan batch %d: write set %d: table %d outside [0, %d)", seq, i, ws.Table, maxTables)
		case stageKind(ws.Stage) == "":
			return fmt.Errorf("hazard: plan batch %d: write set %d: no stage", seq, i)
		case ws.Rows != nil && len(ws.Rows) != len(ws.Index):
			return fmt.Errorf("hazard: plan batch %d: write set %d: %d rows for %d indices", seq, i, len(ws.Rows), len(ws.Index))
		}
		if ws.Kind == Slot {
			for _, x := range ws.Index {
				if x >= maxSlot {
					return fmt.Errorf("hazard: plan batch %d: table %d: slot %d beyond %d", seq, ws.Table, x, int64(maxSlot))
				}
			}
		}
		id, err := c.stageID(ws.Stage)
		if err != nil {
			return fmt.Errorf("plan batch %d: %w", seq, err)
		}
		ids[i] = id
	}
	if len(w) == 0 {
		return nil
	}
	if err := c.claim(seq); err != nil {
		return err
	}
	for i := range w {
		s := c.shardFor(w[i].Table)
		s.mu.Lock()
		if s.add(seq, ids[i], &w[i]) {
			c.ref(seq)
		}
		s.mu.Unlock()
	}
	c.unref(seq, 1)
	return nil
}

// Wrote retires batch seq's writes at stage: the writing stage calls it
// when it has finished the batch, before it takes the next one. A stage
// with nothing declared for seq is a no-op, so every writing stage may
// call it for every batch.
func (c *Checker) Wrote(seq uint64, stage string) {
	c.mu.Lock()
	id, ok := c.stageIDs[stageKind(stage)]
	c.mu.Unlock()
	if !ok {
		return
	}
	c.retire(seq, []uint16{id}, c.strict)
}

// retire ends batch seq's pending writes at stages: retained when keep,
// cleared otherwise.
func (c *Checker) retire(seq uint64, stages []uint16, keep bool) {
	gone, kept := 0, false
	for _, s := range c.allShards() {
		s.mu.Lock()
		for _, id := range stages {
			for _, k := range []Kind{Slot, HostRow} {
				key := writerKey{seq, id, k}
				if keep {
					if l, ok := s.lists[key]; ok && !l.retired {
						kept = true
					}
				}
				gone += s.retire(key, keep)
			}
		}
		s.mu.Unlock()
	}
	c.unref(seq, gone)
	if kept {
		c.mu.Lock()
		c.retained[seq] = true
		c.mu.Unlock()
		c.releaseDone()
	}
}

// Done says batch seq has left the graph: it will neither read nor write
// again. Writes it declared and never reported (a held-out batch that
// train scores but does not update) never happened and are dropped. In
// strict mode Done is also what lets the Checker free the finished writes
// that no batch in flight can conflict with any more.
func (c *Checker) Done(seq uint64) {
	c.mu.Lock()
	ids := make([]uint16, len(c.stages))
	for i := range ids {
		ids[i] = uint16(i)
	}
	if seq >= c.doneNext {
		c.doneSet[seq] = true
		for c.doneSet[c.doneNext] {
			delete(c.doneSet, c.doneNext)
			c.doneNext++
		}
	}
	c.mu.Unlock()
	c.retire(seq, ids, false)
	c.releaseDone()
}

// releaseDone frees the retained writes of every batch b' whose possible
// conflicts, the batches up to b'+window, are all Done.
func (c *Checker) releaseDone() {
	if !c.strict {
		return
	}
	c.mu.Lock()
	var free []uint64
	for seq := range c.retained {
		if seq+c.window < c.doneNext {
			free = append(free, seq)
			delete(c.retained, seq)
		}
	}
	stages := len(c.stages)
	c.mu.Unlock()
	for _, seq := range free {
		gone := 0
		for _, s := range c.allShards() {
			s.mu.Lock()
			for id := range stages {
				for _, k := range []Kind{Slot, HostRow} {
					gone += s.release(writerKey{seq, uint16(id), k})
				}
			}
			s.mu.Unlock()
		}
		c.unref(seq, gone)
	}
}

// Pending counts the writes declared and not yet retired, over all
// tables; a slot or row declared twice by one batch and stage counts once.
func (c *Checker) Pending() int { return c.count(func(s *shard) int { return s.pending }) }

// Retained counts the finished writes a strict Checker still keeps.
func (c *Checker) Retained() int { return c.count(func(s *shard) int { return s.retained }) }

// count sums what of reads from each shard, under the shard's lock.
func (c *Checker) count(of func(*shard) int) int {
	n := 0
	for _, s := range c.allShards() {
		s.mu.Lock()
		n += of(s)
		s.mu.Unlock()
	}
	return n
}

// reader is a read being checked: who reads, where its stage sits in a
// strict Checker's order, and, per column of the shard being read, the
// batches whose pending (early) or retained (late) writes it must not
// meet.
type reader struct {
	seq   uint64
	stage string
	pos   int
	early uint64
	late  []uint64
	seqs  [ring]uint64
}

func (c *Checker) reader(seq uint64, stage string) (*reader, error) {
	r := &reader{seq: seq, stage: stage}
	if c.strict {
		p, ok := c.pos[stageKind(stage)]
		if !ok {
			return nil, fmt.Errorf("hazard: batch %d reads at stage %q: %w", seq, stageKind(stage), ErrNotInOrder)
		}
		r.pos = p
	}
	return r, nil
}

// masks computes the reader's masks for shard s, whose lock is held.
// Holding it keeps every bit set in s meaning the batch the ring names
// now: a ring position is reused only after its batch left every shard,
// and no new batch sets bits in s until the read is done.
func (c *Checker) masks(r *reader, s *shard) {
	c.rmu.Lock()
	used := c.used
	r.seqs = c.ringSeq
	c.rmu.Unlock()
	r.early = 0
	r.late = r.late[:0]
	for u := used; u != 0; u &= u - 1 {
		p := bits.TrailingZeros64(u)
		if r.seqs[p] < r.seq {
			r.early |= 1 << p
		}
	}
	if !c.strict {
		return
	}
	for _, id := range s.cols {
		var m uint64
		wp := c.stagePos[id]
		if wp > r.pos {
			for u := r.early; u != 0; u &= u - 1 {
				p := bits.TrailingZeros64(u)
				d := r.seq - r.seqs[p]
				if d <= uint64(wp-r.pos)*(1+c.queue) && (c.depth == 0 || d < c.depth) {
					m |= 1 << p
				}
			}
		}
		r.late = append(r.late, m)
	}
}

// conflicts is the mask of batches whose writes to one index the read
// must not meet.
func (r *reader) conflicts(w []uint64, cols int) uint64 {
	var m uint64
	for c := range cols {
		m |= w[c] & r.early
	}
	for c, late := range r.late {
		m |= w[cols+c] & late
	}
	return m
}

// hazard names the oldest write the read of index (words w) meets; s.mu
// is held. row is the row the reader expects there, or −1.
func (c *Checker) hazard(r *reader, s *shard, table int, k Kind, index, row int64, w []uint64) (*Hazard, uint16) {
	n := len(s.cols)
	best, bestCol, inFlight := uint64(0), -1, false
	consider := func(m uint64, col int, pending bool) {
		for ; m != 0; m &= m - 1 {
			seq := r.seqs[bits.TrailingZeros64(m)]
			if bestCol < 0 || seq < best || (seq == best && pending && !inFlight) {
				best, bestCol, inFlight = seq, col, pending
			}
		}
	}
	for col := range n {
		consider(w[col]&r.early, col, true)
	}
	for col, late := range r.late {
		consider(w[n+col]&late, col, false)
	}
	stage := s.cols[bestCol]
	h := &Hazard{Seq: r.seq, Stage: r.stage, Kind: k, Table: table, Index: index, Row: row, Writer: best, InFlight: inFlight}
	switch {
	case k == HostRow:
		h.Row = index
	case row < 0:
		h.Row = s.writtenRow(writerKey{best, stage, k}, index)
	}
	return h, stage
}

// finish names the writer stage of h, outside every shard lock.
func (c *Checker) finish(h *Hazard, stage uint16) error {
	h.WriterStage = c.stageName(stage)
	h.RAW = RAW(h.Kind, h.WriterStage, h.Stage)
	return h
}

// ReadSlots checks that batch seq, at stage, may read these Storage slots
// of table: that no earlier batch still has to write one of them. It
// returns a *Hazard for the first slot that fails. Negative slots (a
// bypassed ID) are skipped.
func (c *Checker) ReadSlots(seq uint64, stage string, table int, slots []int64) error {
	return c.read(seq, stage, Slot, table, slots)
}

// ReadRows checks that batch seq, at stage, may read these host rows of
// table (RAW-4 when stage is collect). It returns a *Hazard for the first
// row that fails. Negative rows are skipped.
func (c *Checker) ReadRows(seq uint64, stage string, table int, rows []int64) error {
	return c.read(seq, stage, HostRow, table, rows)
}

func (c *Checker) read(seq uint64, stage string, k Kind, table int, index []int64) error {
	r, err := c.reader(seq, stage)
	if err != nil {
		return err
	}
	s := c.shard(table)
	if s == nil {
		return nil
	}
	s.mu.Lock()
	c.masks(r, s)
	if r.early == 0 {
		s.mu.Unlock()
		return nil
	}
	n, words := len(s.cols), s.words
	for _, x := range index {
		var w []uint64
		if k == Slot {
			if x < 0 || (x+1)*int64(words) > int64(len(s.slots)) {
				continue
			}
			w = s.slots[x*int64(words) : (x+1)*int64(words)]
		} else if w = s.item(HostRow, x, false); w == nil {
			continue
		}
		if r.conflicts(w, n) != 0 {
			h, st := c.hazard(r, s, table, k, x, -1, w)
			s.mu.Unlock()
			return c.finish(h, st)
		}
	}
	s.mu.Unlock()
	return nil
}

// ReadTriples checks the first n (table, row, slot) triples of a batch
// array laid out as the victims and miss_index arrays are: with kind Slot
// it checks each triple's slot (collect reading a victim out of Storage:
// RAW-2, RAW-3), with kind HostRow each triple's row (collect gathering a
// missed row from the host tables: RAW-4). A hazard on a slot names the
// triple's row. Triples with a negative slot or row are skipped.
func (c *Checker) ReadTriples(seq uint64, stage string, k Kind, triples []int64, n int64) error {
	if k != Slot && k != HostRow {
		return fmt.Errorf("hazard: batch %d: read of unknown kind %d", seq, k)
	}
	if n < 0 || 3*n > int64(len(triples)) {
		return fmt.Errorf("hazard: batch %d: %d triples in an array of %d", seq, n, len(triples))
	}
	r, err := c.reader(seq, stage)
	if err != nil {
		return err
	}
	var s *shard
	cur := -1
	unlock := func() {
		if s != nil {
			s.mu.Unlock()
			s = nil
		}
	}
	defer unlock()
	for i := range n {
		t, row, slot := triples[3*i], triples[3*i+1], triples[3*i+2]
		if int(t) != cur {
			unlock()
			cur = int(t)
			if s = c.shard(cur); s != nil {
				s.mu.Lock()
				c.masks(r, s)
			}
		}
		if s == nil || r.early == 0 {
			continue
		}
		x := row
		if k == Slot {
			x = slot
		}
		if x < 0 {
			continue
		}
		w := s.item(k, x, false)
		if w == nil || r.conflicts(w, len(s.cols)) == 0 {
			continue
		}
		h, st := c.hazard(r, s, cur, k, x, row, w)
		unlock()
		return c.finish(h, st)
	}
	return nil
}
