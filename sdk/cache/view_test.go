package cache_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// viewTables are the run the view tests check requests against.
var viewTables = []plugin.Table{{Rows: 10, Dim: 4}, {Rows: 3, Dim: 4}, {Rows: 100, Dim: 4}}

// layout is a plan request for batch seq laid out in one region as a host
// lays it out: ids (one slice per table), slots, hits, victims, then one
// future window per entry of future, each laid out like ids.
type layout struct {
	r   *region.Region
	req *cache.PlanRequest
}

func newLayout(t *testing.T, seq uint64, ids [][]int64, future ...[][]int64) *layout {
	t.Helper()
	r, err := region.Create("view-test", 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	next := int64(0)
	put := func(v []int64) region.Ref {
		ref := r.Ref().Sub(next, 8*int64(len(v)))
		copy(region.Int64s(r.Bytes()[next:]), v)
		next += ref.Length
		return ref
	}
	alloc := func(n int64) region.Ref {
		ref := r.Ref().Sub(next, n)
		next += (n + 7) &^ 7
		return ref
	}
	flat, off := slices.Concat(ids...), []int64{0}
	for _, tab := range ids {
		off = append(off, off[len(off)-1]+int64(len(tab)))
	}
	n := int64(len(flat))
	req := &cache.PlanRequest{Seq: seq, IDs: put(flat), TableOffsets: off,
		Slots: alloc(8 * n), Hits: alloc(n), Victims: alloc(24 * n)}
	for i, f := range future {
		req.Future = append(req.Future, cache.Window{Seq: seq + 1 + uint64(i), IDs: put(slices.Concat(f...))})
	}
	return &layout{r: r, req: req}
}

func mapper(t *testing.T) *region.Mapper {
	m := &region.Mapper{}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestViewMapsTheRequest(t *testing.T) {
	l := newLayout(t, 7, [][]int64{{9, 0, 9}, {}, {99, 5}})
	b, err := l.req.View(mapper(t), viewTables)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.IDs, []int64{9, 0, 9, 99, 5}) || len(b.Slots) != 5 || len(b.Hits) != 5 || len(b.Victims) != 15 {
		t.Fatalf("ids %v, %d slots, %d hits, %d victims", b.IDs, len(b.Slots), len(b.Hits), len(b.Victims))
	}
	for tab, want := range [][2]int64{{0, 3}, {3, 3}, {3, 5}} {
		if lo, hi := b.Table(tab); lo != want[0] || hi != want[1] {
			t.Errorf("table %d owns [%d, %d), want %v", tab, lo, hi, want)
		}
	}
	// The views are the host's memory.
	b.Slots[4], b.Hits[4], b.Victims[14] = 11, 1, 12
	bytes := l.r.Bytes()
	if region.Int64s(bytes[l.req.Slots.Offset:])[4] != 11 || bytes[l.req.Hits.Offset+4] != 1 || region.Int64s(bytes[l.req.Victims.Offset:])[14] != 12 {
		t.Fatal("writes through the view do not reach the region")
	}
	// A batch with no IDs needs no memory.
	empty := &cache.PlanRequest{Seq: 8, TableOffsets: []int64{0, 0, 0, 0}}
	if b, err := empty.View(mapper(t), viewTables); err != nil || len(b.IDs)+len(b.Slots)+len(b.Hits)+len(b.Victims) != 0 {
		t.Fatalf("empty batch: %+v, %v", b, err)
	}
}

// refusal is a malformed request: a good one, mutated.
type refusal struct {
	name   string
	mutate func(*cache.PlanRequest)
	want   string // in the error
}

// refuse checks that err refuses batch 7 as an invalid request, saying want.
func refuse(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, plugin.ErrInvalidRequest) || !strings.HasPrefix(err.Error(), "batch 7: ") || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want plugin.ErrInvalidRequest for batch 7 saying %q", err, want)
	}
}

func TestViewRefusals(t *testing.T) {
	for _, tc := range []refusal{
		{"TooFewTableOffsets", func(r *cache.PlanRequest) { r.TableOffsets = r.TableOffsets[:3] }, "3 table offsets for 3 tables, want 4"},
		{"TooManyTableOffsets", func(r *cache.PlanRequest) { r.TableOffsets = append(r.TableOffsets, 5) }, "5 table offsets"},
		{"OffsetsStartAfterZero", func(r *cache.PlanRequest) { r.TableOffsets[0] = 1 }, "start at 1, want 0"},
		{"OffsetsStartBelowZero", func(r *cache.PlanRequest) { r.TableOffsets[0] = -1 }, "start at -1, want 0"},
		{"OffsetsDecrease", func(r *cache.PlanRequest) { r.TableOffsets[2] = 2 }, "table 1 offsets decrease (3 > 2)"},
		{"CountOverflow", func(r *cache.PlanRequest) { r.TableOffsets[3] = math.MaxInt64/24 + 1 }, "overflow the victims array"},
		{"CountOverflowWrapsSmall", func(r *cache.PlanRequest) { r.TableOffsets[3] = math.MaxInt64/3 + 1 }, "overflow"},
		{"IDsBeyondOffsets", func(r *cache.PlanRequest) { r.TableOffsets[3] += 1000 }, "ids: ref"},
		{"ShortIDs", func(r *cache.PlanRequest) { r.IDs.Length = 8 }, "ids: ref"},
		{"ShortSlots", func(r *cache.PlanRequest) { r.Slots.Length = 39 }, "slots: ref"},
		{"ShortHits", func(r *cache.PlanRequest) { r.Hits.Length = 4 }, "hits: ref"},
		{"ShortVictims", func(r *cache.PlanRequest) { r.Victims.Length = 40 }, "victims: ref"},
		{"MissingIDs", func(r *cache.PlanRequest) { r.IDs = region.Ref{} }, "ids: missing ref"},
		{"NoSuchRegion", func(r *cache.PlanRequest) { r.Hits.Region = region.Prefix + "0-0-view-gone" }, "hits: region not found"},
		{"IDsBeyondRegion", func(r *cache.PlanRequest) { r.IDs.Offset = 1<<16 - 8 }, "ids: ref out of region bounds"},
		{"UnalignedSlots", func(r *cache.PlanRequest) { r.Slots.Offset += 4 }, "slots: offset"},
		{"UnalignedVictimsOfEmptyBatch", func(r *cache.PlanRequest) {
			r.TableOffsets = []int64{0, 0, 0, 0}
			r.Victims.Offset++
		}, "victims: offset"},
		// The layout's "future windows" hold bad IDs for these two.
		{"NegativeID", func(r *cache.PlanRequest) { r.IDs = r.Future[0].IDs }, "table 0: id -1 at position 2 outside [0, 10)"},
		{"IDPastItsTable", func(r *cache.PlanRequest) { r.IDs = r.Future[1].IDs }, "table 1: id 3 at position 3 outside [0, 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLayout(t, 7, [][]int64{{1, 2, 3}, {0}, {50}}, [][]int64{{1, 2, -1}, {0}, {50}}, [][]int64{{1, 2, 3}, {3}, {50}})
			tc.mutate(l.req)
			_, err := l.req.View(mapper(t), viewTables)
			refuse(t, err, tc.want)
		})
	}
	t.Run("NilRequest", func(t *testing.T) {
		var req *cache.PlanRequest
		if _, err := req.View(mapper(t), viewTables); !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestFutureIDs(t *testing.T) {
	ids := [][]int64{{1, 2}, {0}, {50}}
	l := newLayout(t, 7, ids, [][]int64{{3, 4}, {1}, {60}}, [][]int64{{5, 6}, {2}, {70}})
	m := mapper(t)
	future, err := l.req.FutureIDs(m, viewTables)
	if err != nil {
		t.Fatal(err)
	}
	if len(future) != 2 || !slices.Equal(future[0], []int64{3, 4, 1, 60}) || !slices.Equal(future[1], []int64{5, 6, 2, 70}) {
		t.Fatalf("future %v", future)
	}
	if none, err := newLayout(t, 7, ids).req.FutureIDs(m, viewTables); none != nil || err != nil {
		t.Fatalf("no windows: %v, %v", none, err)
	}

	for _, tc := range []refusal{
		{"BadWindow", func(r *cache.PlanRequest) {}, "future window 2 (batch 10): invalid request: table 1: id 3 at position 2 outside [0, 3)"},
		{"WindowIsTheBatch", func(r *cache.PlanRequest) { r.Future[0].Seq = 7 }, "future window 0 is batch 7, not after batch 7"},
		{"WindowsOutOfOrder", func(r *cache.PlanRequest) { r.Future[1].Seq = 8 }, "future window 1 is batch 8, not after batch 8"},
		{"ShortWindow", func(r *cache.PlanRequest) { r.Future[1].IDs.Length = 8 }, "future window 1 (batch 9): invalid request: ids: ref"},
		{"BadOffsets", func(r *cache.PlanRequest) { r.TableOffsets = r.TableOffsets[:2] }, "2 table offsets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Windows 0 and 1 are good, window 2 is not.
			l := newLayout(t, 7, ids, [][]int64{{3, 4}, {1}, {60}}, [][]int64{{5, 6}, {2}, {70}}, [][]int64{{5, 6}, {3}, {70}})
			tc.mutate(l.req)
			_, err := l.req.FutureIDs(mapper(t), viewTables)
			refuse(t, err, tc.want)
		})
	}
}
