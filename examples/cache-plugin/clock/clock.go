// Package clock is a CLOCK (second-chance) cache policy, written as a
// third-party author would: against flowrun's sdk/ and the standard library
// only. The command in the parent directory serves it as a plugin binary;
// flowrun also links it in as builtin:clock.
//
// Per table, capacity slots form a circle with a reference bit each and a
// hand that sweeps for a victim, clearing set bits as it passes (the second
// chance). A batch's hits are found first and held, so that no miss of the
// same batch evicts them; when every slot holds a row of the batch, the
// excess bypasses the cache (slot -1).
package clock

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// clockTable is one table's cache: capacity slots arranged in a circle, a
// reference bit per slot, and a hand that sweeps the circle looking for a
// victim. A slot with its reference bit set gets a second chance: the hand
// clears the bit and moves on.
type clockTable struct {
	slotOf     map[int64]int64 // row -> slot
	rowOf      []int64
	referenced []bool
	// usedBy is the last batch (epoch) that looked the slot's row up. The
	// hand never evicts a row of the current batch, so a batch's rows are
	// all resident together when it trains.
	usedBy []uint64
	used   int64 // slots used by the current batch
	filled int64 // slots [0, filled) hold rows
	hand   int64
}

// clock is the policy: one clockTable per embedding table.
type clock struct {
	mu     sync.Mutex
	mapper region.Mapper // maps the host's shared-memory regions, once each
	cfg    config
	rows   []int64       // rows of each table, from Setup
	tables []*clockTable // nil until Configure
	epoch  uint64
}

// New returns a CLOCK policy; Configure gives it its capacity.
func New() cache.Cache { return &clock{} }

func (c *clock) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{
		Kind:        plugin.KindCache,
		Name:        "clock",
		Version:     "0.1.0",
		APIVersion:  plugin.APIVersion,
		Description: "CLOCK (second-chance) replacement per table; example third-party plugin built only on sdk/",
		Config:      configFields(),
	}, nil
}

func (c *clock) Configure(_ context.Context, setup plugin.Setup) error {
	cfg := defaultConfig()
	if err := plugin.DecodeOptions(setup.Options, &cfg); err != nil {
		return err // already wraps plugin.ErrInvalidConfig
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	rows := make([]int64, len(setup.Tables))
	tables := make([]*clockTable, len(setup.Tables))
	for t, tab := range setup.Tables {
		if tab.Rows < 0 {
			return fmt.Errorf("%w: table %d has %d rows", plugin.ErrInvalidConfig, t, tab.Rows)
		}
		n := min(cfg.Capacity, tab.Rows) // never more slots than rows
		rows[t] = tab.Rows
		tables[t] = &clockTable{
			slotOf:     make(map[int64]int64, n),
			rowOf:      make([]int64, n),
			referenced: make([]bool, n),
			usedBy:     make([]uint64, n),
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg, c.rows, c.tables, c.epoch = cfg, rows, tables, 0
	return nil
}

// Plan decides every ID of one batch, in two passes per table: first the
// hits (so that no miss can evict a row this batch still needs), then the
// misses in request order.
func (c *clock) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tables == nil {
		return nil, plugin.ErrNotConfigured
	}
	b, err := c.view(req)
	if err != nil {
		return nil, fmt.Errorf("clock: batch %d: %w", req.Seq, err)
	}
	c.epoch++
	res := &cache.PlanResult{Tables: make([]cache.TableStats, len(c.tables))}
	for t, tb := range c.tables {
		st := &res.Tables[t]
		lo, hi := req.TableOffsets[t], req.TableOffsets[t+1]
		tb.used = 0
		for i := lo; i < hi; i++ { // pass 1: hits
			s, ok := tb.slotOf[b.ids[i]]
			if !ok {
				b.hits[i] = 0
				continue
			}
			tb.markUsed(s, c.epoch)
			tb.referenced[s] = true
			b.slots[i], b.hits[i] = s, 1
			st.Hits++
		}
		for i := lo; i < hi; i++ { // pass 2: misses
			if b.hits[i] == 1 {
				continue
			}
			st.Misses++
			row := b.ids[i]
			if s, ok := tb.slotOf[row]; ok { // inserted earlier in this batch
				b.slots[i] = s
				continue
			}
			s, victim := tb.place(c.epoch)
			if s < 0 { // every slot holds a row of this batch: bypass
				b.slots[i] = -1
				continue
			}
			if victim >= 0 {
				delete(tb.slotOf, victim)
				v := b.victims[3*res.Victims:]
				v[0], v[1], v[2] = int64(t), victim, s
				res.Victims++
				st.Evictions++
			}
			tb.rowOf[s] = row
			tb.slotOf[row] = s
			tb.referenced[s] = c.cfg.InsertReferenced
			tb.markUsed(s, c.epoch)
			b.slots[i] = s
		}
	}
	return res, nil
}

func (tb *clockTable) markUsed(s int64, epoch uint64) {
	if tb.usedBy[s] != epoch {
		tb.usedBy[s] = epoch
		tb.used++
	}
}

// place finds a slot for a new row: a never-used slot while there is one,
// else the first slot under the hand that is neither used by this batch
// nor referenced since the hand last passed (clearing reference bits on the
// way). It returns the slot and the row it evicts (-1: none), or slot -1
// when every slot is used by this batch. Because one slot at least is not
// used by the batch, the hand stops within two turns.
func (tb *clockTable) place(epoch uint64) (slot, victim int64) {
	n := int64(len(tb.rowOf))
	if tb.filled < n {
		tb.filled++
		return tb.filled - 1, -1
	}
	if tb.used == n { // also covers a table with no slots
		return -1, -1
	}
	for {
		s := tb.hand
		tb.hand = (tb.hand + 1) % n
		switch {
		case tb.usedBy[s] == epoch:
			// held for this batch: not a candidate, and its bit is kept
		case tb.referenced[s]:
			tb.referenced[s] = false // second chance
		default:
			return s, tb.rowOf[s]
		}
	}
}

// batchView is a request's arrays, mapped from shared memory.
type batchView struct {
	ids, slots, victims []int64
	hits                []byte
}

// view checks the request against the setup and maps its regions. Nothing
// about the policy's state changes until every check has passed, so a bad
// request leaves the cache as it was.
func (c *clock) view(req *cache.PlanRequest) (*batchView, error) {
	off := req.TableOffsets
	if len(off) != len(c.tables)+1 || off[0] != 0 {
		return nil, fmt.Errorf("%w: want %d table offsets starting at 0, got %v", plugin.ErrInvalidRequest, len(c.tables)+1, off)
	}
	for t := range c.tables {
		if off[t+1] < off[t] {
			return nil, fmt.Errorf("%w: table %d offsets decrease", plugin.ErrInvalidRequest, t)
		}
	}
	n := off[len(c.tables)]
	if n > math.MaxInt64/24 { // 3 int64 victims per ID must not overflow
		return nil, fmt.Errorf("%w: %d IDs", plugin.ErrInvalidRequest, n)
	}
	ids, err := c.int64s(req.IDs, n, "ids")
	if err != nil {
		return nil, err
	}
	slots, err := c.int64s(req.Slots, n, "slots")
	if err != nil {
		return nil, err
	}
	victims, err := c.int64s(req.Victims, 3*n, "victims")
	if err != nil {
		return nil, err
	}
	hits, err := c.bytes(req.Hits, n, "hits")
	if err != nil {
		return nil, err
	}
	for t, rows := range c.rows {
		for i := off[t]; i < off[t+1]; i++ {
			if ids[i] < 0 || ids[i] >= rows {
				return nil, fmt.Errorf("%w: table %d: id %d outside [0, %d)", plugin.ErrInvalidRequest, t, ids[i], rows)
			}
		}
	}
	return &batchView{ids: ids, slots: slots, victims: victims, hits: hits}, nil
}

// bytes maps the first n bytes of ref, refusing a ref too small for them.
func (c *clock) bytes(ref region.Ref, n int64, what string) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	if ref.Length < n {
		return nil, fmt.Errorf("%w: %s: ref %s holds %d bytes, need %d", plugin.ErrInvalidRequest, what, ref, ref.Length, n)
	}
	b, err := c.mapper.Bytes(ref.Sub(0, n))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", plugin.ErrInvalidRequest, what, err)
	}
	return b, nil
}

// int64s maps n int64s of ref, which must be 8-byte aligned.
func (c *clock) int64s(ref region.Ref, n int64, what string) ([]int64, error) {
	if ref.Offset%8 != 0 {
		return nil, fmt.Errorf("%w: %s: offset %d is not 8-byte aligned", plugin.ErrInvalidRequest, what, ref.Offset)
	}
	b, err := c.bytes(ref, 8*n, what)
	if err != nil {
		return nil, err
	}
	return region.Int64s(b), nil
}
