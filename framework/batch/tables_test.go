package batch

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/region"
)

func newTables(t *testing.T, n int, rows int64, dim, stride int) *Tables {
	t.Helper()
	tabs, err := NewTables(7, n, rows, dim, stride)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tabs.Close() })
	return tabs
}

// raw is table's region as a kernel sees it: no touching.
func raw(t *testing.T, tabs *Tables, table int) []float32 {
	t.Helper()
	var m region.Mapper
	t.Cleanup(func() { m.Close() })
	b, err := m.Bytes(tabs.Kernel()[table].Data)
	if err != nil {
		t.Fatal(err)
	}
	return region.Float32s(b)
}

// rawRow is row id of a table as a kernel sees it: through the index of a
// compact table (kernel.Table.Index); nil for a row not stored.
func rawRow(t *testing.T, tabs *Tables, table int, id int64) []float32 {
	t.Helper()
	k := tabs.Kernel()[table]
	data, s, p := raw(t, tabs, table), int64(k.RowStride()), id
	if !k.Index.IsZero() {
		var m region.Mapper
		t.Cleanup(func() { m.Close() })
		b, err := m.Bytes(k.Index)
		if err != nil {
			t.Fatal(err)
		}
		if p = int64(region.Int32s(b)[id]) - 1; p < 0 {
			return nil
		}
	}
	return data[p*s : (p+1)*s]
}

func TestTouchInitialisesOnce(t *testing.T) {
	const dim, stride = 4, 9
	tabs := newTables(t, 2, 100, dim, stride)
	if err := tabs.Touch(1, []int64{5, 3, 5, 99}); err != nil {
		t.Fatal(err)
	}
	if got := tabs.TouchedRows(1); got != 3 {
		t.Errorf("TouchedRows = %d, want 3", got)
	}
	if tabs.TouchedRows(0) != 0 || tabs.Touched(0, 5) || tabs.Touched(1, 4) || !tabs.Touched(1, 99) {
		t.Error("touched the wrong rows")
	}
	want := make([]float32, stride)
	InitRow(want[:dim], 7, 1, 5, 0.5) // scale 1/sqrt(4)
	if got := rawRow(t, tabs, 1, 5); !slices.Equal(got, want) {
		t.Errorf("row 5 = %v, want InitRow's values and zero state %v", got, want)
	}
	if got := rawRow(t, tabs, 1, 4); got != nil {
		t.Errorf("untouched row 4 = %v, want it not stored", got)
	}
	data := rawRow(t, tabs, 1, 5)

	// A touched row has trained: touching it again leaves it alone.
	data[0] = 42
	data[dim] = 1 // optimizer state
	if err := tabs.Touch(1, []int64{5}); err != nil {
		t.Fatal(err)
	}
	if data[0] != 42 || data[dim] != 1 {
		t.Error("a second touch reinitialised a trained row")
	}

	// Row touches from Go code too, and shows the whole stride.
	if r := tabs.Row(0, 8); len(r) != stride || !tabs.Touched(0, 8) || r[0] == 0 {
		t.Errorf("Row(0, 8) = %v, touched %v", r, tabs.Touched(0, 8))
	}
	if err := tabs.Touch(0, []int64{1, 100, -1}); err == nil {
		t.Error("IDs outside the table accepted")
	}
	if !tabs.Touched(0, 1) {
		t.Error("a valid ID beside bad ones was not touched")
	}
	k := tabs.Kernel()[0]
	if k.Dim != dim || k.Stride != stride || k.Data.Length != 100*stride*4 {
		t.Errorf("Kernel() = %+v", k)
	}
}

// The point of virtual tables: a table far larger than what a run touches
// costs only the pages of the touched rows.
func TestUntouchedRowsCostNothing(t *testing.T) {
	const rows, dim = 1 << 22, 64 // 1 GiB
	tabs := newTables(t, 1, rows, dim, 0)
	if got, err := tabs.AllocatedBytes(); err != nil || got != 0 {
		t.Fatalf("a new table holds %d bytes (%v), want 0", got, err)
	}
	ids := make([]int64, 1000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range ids {
		ids[i] = r.Int64N(rows)
	}
	if err := tabs.Touch(0, ids); err != nil {
		t.Fatal(err)
	}
	got, err := tabs.AllocatedBytes()
	if err != nil {
		t.Fatal(err)
	}
	// Each touched row costs its page(s): a 256-byte row never spans two.
	if page := int64(4096); got == 0 || got > int64(len(ids))*2*page {
		t.Errorf("1000 touched rows hold %d bytes of a %d-byte table", got, tabs.VirtualBytes())
	}
	if tabs.TouchedBytes() > int64(len(ids))*dim*4 || tabs.VirtualBytes() != rows*dim*4 {
		t.Errorf("TouchedBytes %d, VirtualBytes %d", tabs.TouchedBytes(), tabs.VirtualBytes())
	}
}

// The digest covers the touched set and those rows; the order of first
// touches, and which goroutine made them, must not matter.
func TestDigestIndependentOfTouchOrder(t *testing.T) {
	const rows, dim, stride = 5000, 8, 9
	ids := make([]int64, 3000)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range ids {
		ids[i] = r.Int64N(rows)
	}
	dense := []byte("dense model")

	inOrder := newTables(t, 2, rows, dim, stride)
	for tab := range 2 {
		if err := inOrder.Touch(tab, ids); err != nil {
			t.Fatal(err)
		}
	}

	// The same rows backwards, table 1 first, in small batches from
	// concurrent goroutines.
	shuffled := newTables(t, 2, rows, dim, stride)
	rev := slices.Clone(ids)
	slices.Reverse(rev)
	var wg sync.WaitGroup
	for tab := 1; tab >= 0; tab-- {
		for lo := 0; lo < len(rev); lo += 100 {
			wg.Go(func() {
				if err := shuffled.Touch(tab, rev[lo:min(lo+100, len(rev))]); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if a, b := inOrder.Digest(dense), shuffled.Digest(dense); a != b {
		t.Fatalf("digest depends on touch order: %s vs %s", a, b)
	}

	// One more touched row, one changed state float, or a different dense
	// model: a different digest.
	before := inOrder.Digest(dense)
	var untouched int64
	for inOrder.Touched(0, untouched) {
		untouched++
	}
	if err := shuffled.Touch(0, []int64{untouched}); err != nil {
		t.Fatal(err)
	}
	if shuffled.Digest(dense) == before {
		t.Error("touching one more row kept the digest")
	}
	inOrder.Row(1, ids[0])[dim] = 3
	if inOrder.Digest(dense) == before {
		t.Error("changing a row's optimizer state kept the digest")
	}
	if inOrder.Digest([]byte("other")) == inOrder.Digest(dense) {
		t.Error("the dense model is not in the digest")
	}
}

func TestRowStride(t *testing.T) {
	for _, c := range []struct {
		opt    string
		want   kernel.Optimizer
		stride int
	}{{"sgd", kernel.SGD, 16}, {"adagrad", kernel.Adagrad, 32}, {"rowwise_adagrad", kernel.RowWiseAdagrad, 17}} {
		opt, stride, err := RowStride(config.Embedding{Optimizer: c.opt}, 16)
		if err != nil || opt != c.want || stride != c.stride {
			t.Errorf("%s: RowStride = %v, %d, %v; want %v, %d", c.opt, opt, stride, err, c.want, c.stride)
		}
	}
	if _, _, err := RowStride(config.Embedding{Optimizer: "adam"}, 16); err == nil {
		t.Error("adam accepted")
	}
}
