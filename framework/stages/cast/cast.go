// Package cast is Tensor Casting's casting step (Algorithm 2): for every
// table of a batch it turns the forward (src, dst) index pairs, lookup i
// gathering row src[i] into bag dst[i], into the casted (src, dst) pairs
// with which the backward pass coalesces gradients as a plain
// gather-reduce over the gradient table (Algorithm 3): coalesced[castDst[j]]
// += grad[castSrc[j]]. It writes cast_src, cast_dst and cast_rows (the row
// each coalesced gradient updates) into the batch.
//
// Casting needs only the batch's indices, not its gradients, so it can run
// beside the forward pass, which is where the paper hides it. Its consumer,
// the casted gradient gather-reduce in the backward pass, is a kernel
// GatherReduce over the pooled gradients (train's backward: cast); with
// backward: coalesce, train coalesces with expand-coalesce (Algorithm 1)
// and the casted arrays are computed, counted and traced only.
package cast

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
)

// Cast is Algorithm 2 over one table's n forward pairs (len(src) ==
// len(dst) == n): lookup i gathered row src[i] into bag dst[i]. It fills
// castSrc and castDst (n entries each) and rows (one entry per unique row;
// room for n) and returns the number of unique rows:
//
//  1. sort the pairs by src, stably (an LSD radix sort over (row,
//     position) keys), so lookups of one row are adjacent and stay in
//     forward order;
//  2. the sorted dst is the casted src: the bag (gradient) to gather;
//  3. scan for positions where src changes, and take the cumulative sum of
//     those flags: the casted dst, the coalesced gradient to reduce into.
//
// Fig. 8: src [1,2,4,0,2], dst [0,0,0,1,1] → sorted src [0,1,2,2,4],
// castSrc [1,0,0,1,0], castDst [0,1,2,2,3], rows [0,1,2,4].
func Cast(src, dst, castSrc, castDst, rows []int64) int {
	var s scratch
	return s.cast(src, dst, castSrc, castDst, rows)
}

// scratch is Cast's working memory, the sort's keys: the stage keeps one
// across tables and batches, so that casting a batch allocates nothing.
type scratch struct{ keys, tmp []uint64 }

func grow(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	return s[:n]
}

func (s *scratch) cast(src, dst, castSrc, castDst, rows []int64) int {
	n := len(src)
	if n == 0 {
		return 0
	}
	minRow, maxRow := src[0], src[0]
	for _, r := range src[1:] {
		minRow, maxRow = min(minRow, r), max(maxRow, r)
	}
	if minRow < 0 || maxRow >= 1<<32 || n >= 1<<32 {
		return castStable(src, dst, castSrc, castDst, rows)
	}
	// Step 1: sort-by-key, as (row, position) keys sorted by row with an
	// LSD radix sort: stable, so a row's gradients stay in forward order,
	// the canonical accumulation order of flowrun's kernels.
	s.keys, s.tmp = grow(s.keys, n), grow(s.tmp, n)
	keys := s.keys
	for j, r := range src {
		keys[j] = uint64(r)<<32 | uint64(j)
	}
	keys = kernel.SortByRow(keys, s.tmp, maxRow)
	var unique int64
	prev := int64(-1)
	for j, k := range keys {
		r := int64(k >> 32)
		castSrc[j] = dst[uint32(k)]
		// Steps 2–3: a new ID starts a new coalesced gradient; the running
		// sum of those starts is where lookup j reduces into.
		if j > 0 && r != prev {
			unique++
		}
		prev = r
		castDst[j] = unique
		rows[unique] = r
	}
	return int(unique + 1)
}

// castStable is Cast for rows outside [0, 2³²): a stable comparison sort.
func castStable(src, dst, castSrc, castDst, rows []int64) int {
	n := len(src)
	type pair struct{ src, dst int64 }
	pairs := make([]pair, n)
	for i := range pairs {
		pairs[i] = pair{src[i], dst[i]}
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return cmp.Compare(a.src, b.src) })
	var unique int64
	for j, p := range pairs {
		castSrc[j] = p.dst
		if j > 0 && p.src != pairs[j-1].src {
			unique++
		}
		castDst[j] = unique
		rows[unique] = p.src
	}
	return int(unique + 1)
}

type caster struct {
	set      stage.Settings
	name     string // the graph's device name
	dev      device.Device
	transfer bool // the index crosses dev's link (Config.Transfer)

	// Reused across tables and batches (the runtime calls Process one
	// batch at a time): the bag of each lookup, and the sort's keys.
	dst []int64
	scratch
}

// The per-batch stats of the casting step, Fig. 12's red bar: measured
// wall time and modeled time, and the modeled time of the index copies
// over the device's link (with transfer).
var (
	PrimCast            = batch.NewStat("prim_cast_ns")
	ModeledPrimCast     = batch.NewStat("modeled_prim_cast_ns")
	ModeledPrimTransfer = batch.NewStat("modeled_prim_transfer_ns")
)

// Lookups and UniqueRows are the casting step's input and output, per
// batch: the lookups cast and the unique rows they update.
var Lookups, UniqueRows = batch.NewStat("cast_lookups"), batch.NewStat("unique_rows")

// sortPasses is the radix passes of Step 1 over the dataset's rows
// (11-bit digits: 2²² rows take two).
func (c *caster) sortPasses() int {
	rows := int64(1 << 22)
	if c.set.Graph != nil && c.set.Graph.Dataset.MaxRows() > 0 {
		rows = c.set.Graph.Dataset.MaxRows()
	}
	return kernel.SortPasses(rows)
}

func (c *caster) Process(ctx context.Context, b *batch.Batch) error {
	var ids, offsets, castSrc, castDst, castRows []int64
	var err error
	for _, x := range []struct {
		array batch.Array[int64]
		dst   *[]int64
	}{{batch.IDs, &ids}, {batch.Offsets, &offsets}, {batch.CastSrc, &castSrc}, {batch.CastDst, &castDst}, {batch.CastRows, &castRows}} {
		if *x.dst, err = x.array.View(b); err != nil {
			return err
		}
	}
	l := c.set.Layout
	B := int64(l.BatchSize)
	start := l.IndexStart()
	if int64(len(offsets)) < int64(l.Tables)*(B+1) {
		return fmt.Errorf("batch %d: offsets array too short for %d tables", b.Seq, l.Tables)
	}
	var lookups, unique int64
	wall := time.Now()
	for t := range l.Tables {
		off := offsets[int64(t)*(B+1) : int64(t+1)*(B+1)]
		if off[0] < 0 || off[B] > int64(l.IDsPerTable) {
			return fmt.Errorf("batch %d: table %d: bag offsets [%d, %d) outside the table's %d IDs", b.Seq, t, off[0], off[B], l.IDsPerTable)
		}
		c.dst = c.dst[:0]
		for bag := range B {
			if off[bag+1] < off[bag] {
				return fmt.Errorf("batch %d: table %d: bag %d offsets decrease (%d > %d)", b.Seq, t, bag, off[bag], off[bag+1])
			}
			for range off[bag+1] - off[bag] {
				c.dst = append(c.dst, bag)
			}
		}
		lo, hi := start[t]+off[0], start[t]+off[B]
		unique += int64(c.cast(ids[lo:hi], c.dst, castSrc[lo:hi], castDst[lo:hi], castRows[lo:hi]))
		lookups += hi - lo
	}
	PrimCast.Set(b, time.Since(wall).Nanoseconds())

	Lookups.Set(b, lookups)
	UniqueRows.Set(b, unique)
	if c.dev == nil {
		return nil
	}
	ops := []device.Op{
		{Name: "read-index-pairs", Kind: device.Read, Bytes: 16 * lookups},
		// The sort-by-key: each radix pass reads and writes the 8-byte
		// (row, position) keys (Step 1).
		{Name: "sort-by-key", Kind: device.Write, Bytes: int64(c.sortPasses()) * 2 * 8 * lookups},
		{Name: "write-casted-pairs", Kind: device.Write, Bytes: 16*lookups + 8*unique},
	}
	if c.transfer {
		// The index in (the IDs and each table's bag offsets, from which
		// the dst of every pair follows), the casted arrays out to where
		// the casted gather-reduce runs (cast_src, cast_dst, cast_rows).
		ops = append(ops,
			device.Op{Name: "index-to-device", Kind: device.Transfer, Bytes: 8*lookups + 8*int64(l.Tables)*(B+1)},
			device.Op{Name: "casted-index-back", Kind: device.Transfer, Bytes: 16*lookups + 8*unique})
	}
	each, err := stage.ChargeEach(ctx, b, c.name, c.dev, ops...)
	if err != nil {
		return err
	}
	var ns, cast int64
	for i, t := range each {
		ns += t
		if ops[i].Kind != device.Transfer {
			cast += t
		}
	}
	ModeledPrimCast.Set(b, cast)
	if c.transfer {
		ModeledPrimTransfer.Set(b, ns-cast)
	}
	batch.ModeledNs.Set(b, ns)
	return nil
}

// create builds a cast stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	s := &caster{set: set, name: c.Device, transfer: c.Transfer}
	var err error
	s.dev, err = set.Device("device", c.Device)
	return s, err
}
