package batch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flowrun/flowrun/sdk/region"
)

// TestPageSetPopulateRows checks that exactly the pages the rows lie in are
// marked, rows crossing a page boundary included, whatever the order of
// earlier calls.
func TestPageSetPopulateRows(t *testing.T) {
	for _, rowBytes := range []int64{64, 512, 5000, 12} {
		t.Run(fmt.Sprint(rowBytes), func(t *testing.T) {
			const rows = 4096
			r, err := region.Create("pageset", rows*rowBytes)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ps := newPageSet(r.Bytes())
			want := make(map[int64]bool)
			rng := rand.New(rand.NewPCG(1, uint64(rowBytes)))
			var no atomic.Bool
			for range 5 {
				ids := make([]int64, 50)
				for i := range ids {
					ids[i] = rng.Int64N(rows)
				}
				slices.Sort(ids)
				ids = slices.Compact(ids)
				if err := ps.populateRows(&no, ids, rowBytes); err != nil {
					t.Fatal(err)
				}
				for _, id := range ids {
					for p := (id * rowBytes) >> ps.shift; p <= ((id+1)*rowBytes-1)>>ps.shift; p++ {
						want[p] = true
					}
				}
			}
			pages := (int64(len(r.Bytes())) + 1<<ps.shift - 1) >> ps.shift
			for p := range pages {
				if ps.has(p) != want[p] {
					t.Fatalf("page %d: marked %v, want %v", p, ps.has(p), want[p])
				}
			}
		})
	}
}

// TestTouchBulkMatchesRow checks that rows touched in bulk, in any order
// and with repeats, hold what a row touched alone holds.
func TestTouchBulkMatchesRow(t *testing.T) {
	a, err := NewTables(7, 2, 1<<14, 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewTables(7, 2, 1<<14, 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	ids := make([]int64, 3000)
	for i := range ids {
		ids[i] = rng.Int64N(1 << 14)
	}
	if err := a.TouchTables([][]int64{ids, ids[:100]}); err != nil {
		t.Fatal(err)
	}
	for tab, n := range []int{len(ids), 100} {
		for _, id := range ids[:n] {
			if !slices.Equal(a.Row(tab, id), b.Row(tab, id)) {
				t.Fatalf("table %d row %d differs", tab, id)
			}
		}
		if a.TouchedRows(tab) != b.TouchedRows(tab) {
			t.Fatalf("table %d: %d touched in bulk, %d alone", tab, a.TouchedRows(tab), b.TouchedRows(tab))
		}
	}
	if err := a.Touch(0, []int64{5, -1, 1 << 14, 6}); err == nil || !a.Touched(0, 6) {
		t.Fatalf("out-of-range rows: err %v, row 6 touched %v (want an error and the valid rows touched)", err, a.Touched(0, 6))
	}
}

// touchPerRow is first touch as it was before pages were populated in
// bulk: one MADV_POPULATE_WRITE per new row. The benchmark's reference.
func (t *Tables) touchPerRow(table int, ids []int64) error {
	vt := t.tables[table]
	s := int64(t.Stride)
	for _, id := range ids {
		if vt.bits[id>>6].Load()&(1<<(id&63)) != 0 {
			continue
		}
		vt.mu.Lock()
		if err := populate(&vt.noPopulate, vt.mem, id*s*4, s*4); err != nil {
			vt.mu.Unlock()
			return err
		}
		row := vt.data[id*s : (id+1)*s]
		InitRow(row[:t.Dim], t.seed, table, id, t.scale)
		clear(row[t.Dim:])
		vt.bits[id>>6].Or(1 << (id & 63))
		vt.touched.Add(1)
		vt.mu.Unlock()
	}
	return nil
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// byRow makes t's tables lay rows out by row (no index), as before
// compact tables.
func byRow(t *Tables) *Tables {
	for _, vt := range t.tables {
		if vt.indexR != nil {
			vt.indexR.Close()
			vt.indexR, vt.index = nil, nil
		}
	}
	return t
}

// BenchmarkFirstTouch compares first touch in bulk into compact tables
// (Touch, the default), in bulk into tables laid out by row, and with a
// syscall per row into tables by row (touchPerRow, as before), the three
// alternated on fresh tables each iteration: batches of random rows of one
// table, at dim 16 (64 rows to a page, the default graph) and dim 128 (8
// rows to a page, ScratchPipe's paper configuration). It reports CPU time
// per new row of each and their ratios to the syscall per row.
func BenchmarkFirstTouch(b *testing.B) {
	for _, c := range []struct {
		dim  int
		rows int64
	}{{16, 1 << 22}, {128, 1 << 21}} {
		b.Run(fmt.Sprintf("dim%d", c.dim), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			batches := make([][]int64, 20)
			for i := range batches {
				batches[i] = make([]int64, 8192)
				for j := range batches[i] {
					batches[i][j] = rng.Int64N(c.rows)
				}
			}
			var cpu [3]time.Duration
			var rows [3]int64
			for i := 0; b.Loop(); i++ {
				for k := range 3 {
					which := (i + k) % 3 // rotate which runs first
					tab, err := NewTables(1, 1, c.rows, c.dim, c.dim)
					if err != nil {
						b.Fatal(err)
					}
					if which > 0 {
						byRow(tab)
					}
					start := cpuTime()
					for _, ids := range batches {
						if which < 2 {
							err = tab.Touch(0, ids)
						} else {
							err = tab.touchPerRow(0, ids)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					cpu[which] += cpuTime() - start
					rows[which] += tab.TouchedRows(0)
					tab.Close()
				}
			}
			ns := func(k int) float64 { return float64(cpu[k].Nanoseconds()) / float64(rows[k]) }
			b.ReportMetric(ns(0), "compact-cpu-ns/row")
			b.ReportMetric(ns(1), "byrow-cpu-ns/row")
			b.ReportMetric(ns(2), "perrow-cpu-ns/row")
			b.ReportMetric(ns(0)/ns(2), "compact/perrow")
			b.ReportMetric(ns(1)/ns(2), "byrow/perrow")
		})
	}
}
