package reftest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
)

// CheckSnapshot checks a policy's cache.Snapshotter: a policy that plans
// the first half of a run, is snapshotted, and a fresh one restored from
// the snapshot plan the second half exactly alike (slots, hits, victims,
// counts), each batch with a future window of future batches. A snapshot
// cut short, or restored into a policy of other tables, is refused, and
// the refused policy still plans as a fresh one.
func CheckSnapshot(t *testing.T, newCache func() cache.Cache, options string, future int) {
	t.Helper()
	rows := []int64{200, 50}
	rng := rand.New(rand.NewPCG(7, 9))
	batches := make([][][]int64, 24)
	for i := range batches {
		for range rows {
			ids := make([]int64, 12)
			for j := range ids {
				ids[j] = min(int64(rng.ExpFloat64()*12), 49) // skewed: hits and evictions both
			}
			batches[i] = append(batches[i], ids)
		}
	}
	ctx := context.Background()
	a := Configured(t, newCache(), 3, options, rows...)
	arena := cachetest.NewArena(t, 1<<22)
	plans := make([]*cachetest.Plan, len(batches))
	for i, ids := range batches {
		plans[i] = arena.NewPlan(uint64(i), ids)
	}
	plan := func(c cache.Cache, i int) string {
		t.Helper()
		p := plans[i]
		p.Req.Future = nil
		for _, next := range plans[i+1 : min(len(plans), i+1+future)] {
			p.Req.Future = append(p.Req.Future, cache.Window{Seq: next.Req.Seq, IDs: next.Req.IDs})
		}
		res, err := c.Plan(ctx, p.Req)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		var out bytes.Buffer
		for tab := range rows {
			fmt.Fprint(&out, p.Slots(tab), p.Hits(tab))
		}
		fmt.Fprint(&out, res.Tables, p.Victims(res.Victims))
		return out.String()
	}
	half := len(batches) / 2
	for i := range half {
		plan(a, i)
	}
	snap, err := cache.SnapshotOf(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{snap[:len(snap)-1], snap[:len(snap)/2], append(slices.Clone(snap), 1)} {
		if err := cache.RestoreOf(ctx, Configured(t, newCache(), 3, options, rows...), bad); err == nil {
			t.Fatalf("a snapshot of %d bytes (taken: %d) restored", len(bad), len(snap))
		}
	}
	if err := cache.RestoreOf(ctx, Configured(t, newCache(), 3, options, rows[0]), snap); err == nil {
		t.Fatal("a snapshot of 2 tables restored into a policy of 1")
	}
	b := Configured(t, newCache(), 3, options, rows...)
	if err := cache.RestoreOf(ctx, b, snap); err != nil {
		t.Fatal(err)
	}
	again, err := cache.SnapshotOf(ctx, b)
	if err != nil || !bytes.Equal(again, snap) {
		t.Fatalf("the restored policy's snapshot differs (%v)", err)
	}
	for i := half; i < len(batches); i++ {
		if wa, wb := plan(a, i), plan(b, i); wa != wb {
			t.Fatalf("batch %d: the restored policy planned\n%s\nthe snapshotted one\n%s", i, wb, wa)
		}
	}
}
