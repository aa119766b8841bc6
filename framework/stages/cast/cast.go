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
// operator that does not exist yet: until it does, train keeps coalescing
// with expand-coalesce (Algorithm 1) and the casted arrays are computed,
// counted and traced but not used.
package cast

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
)

// Cast is Algorithm 2 over one table's n forward pairs (len(src) ==
// len(dst) == n): lookup i gathered row src[i] into bag dst[i]. It fills
// castSrc and castDst (n entries each) and rows (one entry per unique row;
// room for n) and returns the number of unique rows:
//
//  1. sort the pairs by src, stably, so lookups of one row are adjacent and
//     stay in forward order;
//  2. the sorted dst is the casted src: the bag (gradient) to gather;
//  3. scan for positions where src changes, and take the cumulative sum of
//     those flags: the casted dst, the coalesced gradient to reduce into.
//
// Fig. 8: src [1,2,4,0,2], dst [0,0,0,1,1] → sorted src [0,1,2,2,4],
// castSrc [1,0,0,1,0], castDst [0,1,2,2,3], rows [0,1,2,4].
func Cast(src, dst, castSrc, castDst, rows []int64) int {
	n := len(src)
	if n == 0 {
		return 0
	}
	type pair struct{ src, dst int64 }
	pairs := make([]pair, n)
	for i := range pairs {
		pairs[i] = pair{src[i], dst[i]}
	}
	// Step 1: sort-by-key. Stability keeps a row's gradients in forward
	// order, the canonical accumulation order of flowrun's kernels.
	slices.SortStableFunc(pairs, func(a, b pair) int { return cmp.Compare(a.src, b.src) })
	var unique int64
	for j, p := range pairs {
		castSrc[j] = p.dst
		// Steps 2–3: a new ID starts a new coalesced gradient; the running
		// sum of those starts is where lookup j reduces into.
		if j > 0 && p.src != pairs[j-1].src {
			unique++
		}
		castDst[j] = unique
		rows[unique] = p.src
	}
	return int(unique + 1)
}

type caster struct {
	set stage.Settings
	dev device.Device
}

func (c *caster) Process(ctx context.Context, b *batch.Batch) error {
	var ids, offsets, castSrc, castDst, castRows []int64
	var err error
	for _, x := range []struct {
		name string
		dst  *[]int64
	}{{batch.IDs, &ids}, {batch.Offsets, &offsets}, {batch.CastSrc, &castSrc}, {batch.CastDst, &castDst}, {batch.CastRows, &castRows}} {
		if *x.dst, err = b.Int64s(x.name); err != nil {
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
	var dst []int64
	for t := range l.Tables {
		off := offsets[int64(t)*(B+1) : int64(t+1)*(B+1)]
		if off[0] < 0 || off[B] > int64(l.IDsPerTable) {
			return fmt.Errorf("batch %d: table %d: bag offsets [%d, %d) outside the table's %d IDs", b.Seq, t, off[0], off[B], l.IDsPerTable)
		}
		dst = dst[:0]
		for bag := range B {
			if off[bag+1] < off[bag] {
				return fmt.Errorf("batch %d: table %d: bag %d offsets decrease (%d > %d)", b.Seq, t, bag, off[bag], off[bag+1])
			}
			for range off[bag+1] - off[bag] {
				dst = append(dst, bag)
			}
		}
		lo, hi := start[t]+off[0], start[t]+off[B]
		unique += int64(Cast(ids[lo:hi], dst, castSrc[lo:hi], castDst[lo:hi], castRows[lo:hi]))
		lookups += hi - lo
	}

	b.SetStat("cast_lookups", lookups)
	b.SetStat("unique_rows", unique)
	if c.dev != nil {
		var ns int64
		res, err := c.dev.Cost(ctx, &device.CostRequest{Seq: b.Seq, Ops: []device.Op{
			{Name: "read-index-pairs", Kind: device.Read, Bytes: 16 * lookups},
			{Name: "write-casted-pairs", Kind: device.Write, Bytes: 16*lookups + 8*unique},
		}})
		if err != nil {
			return fmt.Errorf("device cost: %w", err)
		}
		for _, v := range res.ModeledNs {
			ns += v
		}
		b.SetStat("modeled_ns", ns)
	}
	return nil
}
