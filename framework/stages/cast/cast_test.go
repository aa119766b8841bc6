package cast

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
)

// Fig. 8 of the Tensor Casting paper: batch 0 gathers rows 1, 2, 4 and
// batch 1 rows 0, 2.
func TestCastFig8(t *testing.T) {
	src := []int64{1, 2, 4, 0, 2}
	dst := []int64{0, 0, 0, 1, 1}
	castSrc, castDst, rows := make([]int64, 5), make([]int64, 5), make([]int64, 5)
	n := Cast(src, dst, castSrc, castDst, rows)
	if n != 4 {
		t.Errorf("unique rows = %d, want 4", n)
	}
	// Sorted src is [0,1,2,2,4]; the sorted dst is the casted src.
	if want := []int64{1, 0, 0, 1, 0}; !slices.Equal(castSrc, want) {
		t.Errorf("casted src = %v, want %v", castSrc, want)
	}
	if want := []int64{0, 1, 2, 2, 3}; !slices.Equal(castDst, want) {
		t.Errorf("casted dst = %v, want %v", castDst, want)
	}
	if want := []int64{0, 1, 2, 4}; !slices.Equal(rows[:n], want) {
		t.Errorf("rows = %v, want %v", rows[:n], want)
	}
	if !slices.Equal(src, []int64{1, 2, 4, 0, 2}) {
		t.Error("Cast changed its input")
	}
}

// Algorithm 3 over the casted pairs coalesces exactly what expand-coalesce
// (Algorithm 1) does, in the same per-row order.
func TestCastedGatherReduceEqualsExpandCoalesce(t *testing.T) {
	src := []int64{3, 1, 3, 3, 0, 1, 7, 3}
	dst := []int64{0, 0, 1, 1, 2, 2, 3, 3}
	grad := []float32{0.5, -1.25, 2, 0.125} // one per bag
	castSrc, castDst, rows := make([]int64, 8), make([]int64, 8), make([]int64, 8)
	n := Cast(src, dst, castSrc, castDst, rows)

	coal := make([]float32, n)
	for j := range castSrc {
		coal[castDst[j]] += grad[castSrc[j]]
	}
	want := map[int64]float32{}
	for i, r := range src {
		want[r] += grad[dst[i]]
	}
	if n != len(want) {
		t.Fatalf("unique rows %d, want %d", n, len(want))
	}
	for u, r := range rows[:n] {
		if coal[u] != want[r] {
			t.Errorf("row %d: casted %v, expand-coalesce %v", r, coal[u], want[r])
		}
	}
}

func TestCastEmpty(t *testing.T) {
	if n := Cast(nil, nil, nil, nil, nil); n != 0 {
		t.Errorf("Cast(empty) = %d", n)
	}
}

func TestCastStage(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{})
	s := stagetest.MustCreate(t, NewFactory(), e.Set)
	b := e.Batch(t, 2)
	// Small: 4 bags of 3 lookups per table.
	e.SetIDs(t, b, [][]int64{
		{1, 2, 4, 0, 2, 9, 9, 9, 9, 1, 1, 1},
		{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5},
	})
	stagetest.Process(t, s, b)
	if got := b.Stats["unique_rows"]; got != 5+1 {
		t.Errorf("unique_rows = %d, want 6 (table 0: 0,1,2,4,9; table 1: 5)", got)
	}
	if b.Stats["cast_lookups"] != 24 || b.Stats["modeled_ns"] <= 0 {
		t.Errorf("stats %v", b.Stats)
	}
	castSrc, _ := b.Int64s(batch.CastSrc)
	castDst, _ := b.Int64s(batch.CastDst)
	rows, _ := b.Int64s(batch.CastRows)
	// Table 0 sorted: 0(b1) 1(b0) 1(b3)×3 2(b0) 2(b1) 4(b0) 9(b1) 9(b2)×3.
	if want := []int64{1, 0, 3, 3, 3, 0, 1, 0, 1, 2, 2, 2}; !slices.Equal(castSrc[:12], want) {
		t.Errorf("table 0 casted src %v, want %v", castSrc[:12], want)
	}
	if want := []int64{0, 1, 1, 1, 1, 2, 2, 3, 4, 4, 4, 4}; !slices.Equal(castDst[:12], want) {
		t.Errorf("table 0 casted dst %v, want %v", castDst[:12], want)
	}
	if want := []int64{0, 1, 2, 4, 9}; !slices.Equal(rows[:5], want) {
		t.Errorf("table 0 rows %v, want %v", rows[:5], want)
	}
	// Table 1 starts at its own index start.
	if castDst[12+11] != 0 || rows[12] != 5 || castSrc[12+11] != 3 {
		t.Errorf("table 1: casted dst %v rows %v src %v", castDst[12:24], rows[12], castSrc[12:24])
	}
}

func TestCastStageRejectsBadOffsets(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{})
	s, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).Device = "" })
	if err != nil {
		t.Fatal(err)
	}
	b := e.Batch(t, 4)
	e.SetIDs(t, b, [][]int64{make([]int64, 12), make([]int64, 12)})
	offs, _ := b.Int64s(batch.Offsets)
	offs[2] = 1 // bag 1 ends before it starts
	err = s.(stage.Stage).Process(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), "batch 4") || !strings.Contains(err.Error(), "bag 1") {
		t.Errorf("err = %v", err)
	}
}

func TestCastWithoutDeviceChargesNothing(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{})
	s, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).Device = "" })
	if err != nil {
		t.Fatal(err)
	}
	b := e.Batch(t, 0)
	e.Load(t, b)
	stagetest.Process(t, s, b)
	if _, ok := b.Stats["modeled_ns"]; ok {
		t.Error("modeled_ns set with no device")
	}
	if b.Stats["unique_rows"] < 1 {
		t.Errorf("unique_rows = %d", b.Stats["unique_rows"])
	}
}

// The radix path (≥ 512 lookups, rows below 2³²) casts exactly as the
// stable comparison sort does, also with the stage's working memory reused
// from a larger call.
func TestCastRadixEqualsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var reused scratch
	for _, n := range []int{511, 512, 5000, 600} {
		for _, rows := range []int64{3, 1000, 1 << 30} {
			src, dst := make([]int64, n), make([]int64, n)
			for i := range src {
				src[i], dst[i] = rng.Int64N(rows), int64(i/4)
			}
			a := [3][]int64{make([]int64, n), make([]int64, n), make([]int64, n)}
			b := [3][]int64{make([]int64, n), make([]int64, n), make([]int64, n)}
			ua := Cast(src, dst, a[0], a[1], a[2])
			ub := castStable(src, dst, b[0], b[1], b[2])
			if ua != ub || !slices.Equal(a[0], b[0]) || !slices.Equal(a[1], b[1]) || !slices.Equal(a[2][:ua], b[2][:ub]) {
				t.Fatalf("n=%d rows=%d: radix and stable casts differ", n, rows)
			}
			c := [3][]int64{make([]int64, n), make([]int64, n), make([]int64, n)}
			if uc := reused.cast(src, dst, c[0], c[1], c[2]); uc != ub || !slices.Equal(c[0], b[0]) || !slices.Equal(c[1], b[1]) || !slices.Equal(c[2][:uc], b[2][:ub]) {
				t.Fatalf("n=%d rows=%d: the cast with reused working memory differs", n, rows)
			}
		}
	}
}

// On the GPU (the default, Sec. IV-B) the index is copied to the device
// and the casted arrays back, over its link; on a device that holds the
// index (transfer: false) only the casting itself is charged.
func TestCastStageTransfer(t *testing.T) {
	for _, transfer := range []bool{true, false} {
		e := stagetest.New(t, stagetest.Options{})
		s, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).Transfer = transfer })
		if err != nil {
			t.Fatal(err)
		}
		b := e.Batch(t, 0)
		e.Load(t, b)
		stagetest.Process(t, s, b)
		cast, copies := b.Stats[ModeledPrimCast.Name()], b.Stats[ModeledPrimTransfer.Name()]
		if cast <= 0 || b.Stats[stage.DeviceStat("gpu")] != b.Stats["modeled_ns"] || b.Stats["modeled_ns"] != cast+copies {
			t.Errorf("transfer %v: stats %v", transfer, b.Stats)
		}
		if (copies > 0) != transfer {
			t.Errorf("transfer %v: modeled transfer %d ns", transfer, copies)
		}
	}
}

// One table of ScratchPipe's default batch (2048 samples × 20 lookups over
// 10M rows), cast with fresh working memory (Cast) and with the stage's,
// reused across calls. Compare the two as a ratio within one run.
func BenchmarkCast(b *testing.B) {
	const n, rows = 2048 * 20, 10_000_000
	rng := rand.New(rand.NewPCG(1, 2))
	src, dst := make([]int64, n), make([]int64, n)
	for i := range src {
		src[i], dst[i] = rng.Int64N(rows), int64(i/20)
	}
	castSrc, castDst, out := make([]int64, n), make([]int64, n), make([]int64, n)
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Cast(src, dst, castSrc, castDst, out)
		}
	})
	b.Run("reused", func(b *testing.B) {
		b.ReportAllocs()
		var s scratch
		for b.Loop() {
			s.cast(src, dst, castSrc, castDst, out)
		}
	})
}
