package results

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPercentilesNearestRank(t *testing.T) {
	ns := make([]int64, 100)
	for i := range ns {
		ns[len(ns)-1-i] = int64(i+1) * 1e6 // 1..100 ms, reversed
	}
	p := PercentilesOf(ns)
	if p.P50 != 50 || p.P95 != 95 || p.P99 != 99 || p.Max != 100 || p.Mean != 50.5 {
		t.Fatalf("got %+v", p)
	}
	if (PercentilesOf(nil) != Percentiles{}) {
		t.Fatal("empty input must give zeros")
	}
}

func TestLossCurve(t *testing.T) {
	var pts []Point
	for i := 0; i < 100; i++ {
		pts = append(pts, Point{Batch: uint64(i), Value: float64(100 - i)})
	}
	c := NewLossCurve(pts, 10)
	if c.First != 100 || c.Last != 1 || len(c.Points) != 11 {
		t.Fatalf("got first %v last %v, %d points", c.First, c.Last, len(c.Points))
	}
	if c.FirstTenthMean != 95.5 || c.LastTenthMean != 5.5 {
		t.Fatalf("tenth means %v %v", c.FirstTenthMean, c.LastTenthMean)
	}
	if NewLossCurve(nil, 1) != nil {
		t.Fatal("no points must give no curve")
	}
}

func TestWriteIsAtomicAndReadable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	r := &Results{Graph: "g", Seed: 3, Batches: 2, Digest: "abc"}
	if err := r.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Graph != "g" || got.Seed != 3 || got.Digest != "abc" {
		t.Fatalf("read back %+v", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
	if err := r.Write(filepath.Join(dir, "missing", "r.json")); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// ProfileLimit: a cache whose warm-up profile saw fewer distinct rows (in
// every table) than it holds is limited by its data.
func TestCacheProfileLimit(t *testing.T) {
	for _, c := range []struct {
		cache   *Cache
		rows    int64
		limited bool
	}{
		{nil, 0, false},
		{&Cache{Rows: 100}, 0, false},
		{&Cache{Rows: 100, ProfileRows: []int64{40, 90}}, 90, true},
		{&Cache{Rows: 100, ProfileRows: []int64{40, 100}}, 100, false},
		{&Cache{Rows: 100, ProfileRows: []int64{400, 90}}, 400, false},
	} {
		rows, limited := c.cache.ProfileLimit()
		if rows != c.rows || limited != c.limited {
			t.Errorf("%+v: ProfileLimit() = %d, %v, want %d, %v", c.cache, rows, limited, c.rows, c.limited)
		}
	}
}

// Results files are readable by others (0644), not the temporary file's
// 0600.
func TestWriteJSONMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(path, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
}
