package batch

import (
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/region"
)

func testShape() Shape {
	return Shape{Tables: 2, BatchSize: 4, Lookups: 3, Dim: 8, DenseFeatures: 5, Stride: 16}
}

// The wrapper for the whole set lays out every array as the layout did
// before fields were declared: same sizes, same order.
func TestNewLayoutHoldsEveryArray(t *testing.T) {
	d := config.Default().Dataset
	d.Tables, d.BatchSize, d.Lookups, d.Dim, d.DenseFeatures = 2, 4, 3, 8, 5
	l := NewLayout(d, 16)
	ids := int64(2 * 4 * 3)
	want := map[string]int64{
		"ids": 8 * ids, "offsets": 8 * 2 * 5, "dense": 4 * 4 * 5, "labels": 4 * 4,
		"slots": 8 * ids, "hits": ids, "victims": 24 * ids, "pooled": 4 * 2 * 4 * 8, "grads": 4 * 2 * 4 * 8,
		"scores": 4 * 4, "miss_rows": 4 * ids * 16, "miss_index": 24 * ids, "victim_rows": 4 * ids * 16,
		"cast_src": 8 * ids, "cast_dst": 8 * ids, "cast_rows": 8 * ids, "topk": 8 * 4,
	}
	refs := l.Refs("buf")
	if len(refs) != len(want) {
		t.Fatalf("%d arrays, want %d", len(refs), len(want))
	}
	var end int64
	for _, f := range l.Fields() {
		r := refs[f.Name()]
		if r.Length != want[f.Name()] {
			t.Errorf("%s: %d bytes, want %d", f.Name(), r.Length, want[f.Name()])
		}
		if r.Offset != end || r.Offset%64 != 0 {
			t.Errorf("%s at %d, want %d (64-byte aligned, in order)", f.Name(), r.Offset, end)
		}
		end = r.Offset + (r.Length+63)&^63
	}
	if l.Size != end || l.IDsPerTable != 12 || l.Stride != 16 {
		t.Errorf("size %d (want %d), IDsPerTable %d, Stride %d", l.Size, end, l.IDsPerTable, l.Stride)
	}
}

// A layout built from a graph's fields holds those arrays only, whoever
// declared them, and no room for stats.
func TestNewLayoutForHoldsTheDeclaredArrays(t *testing.T) {
	keys := NewArray[float32]("keys", func(s Shape) int64 { return int64(s.BatchSize) * 2 })
	l, err := NewLayoutFor(testShape(), []Field{IDs, Misses, keys, IDs})
	if err != nil {
		t.Fatal(err)
	}
	refs := l.Refs("buf")
	if len(refs) != 2 || refs["ids"].Length != 8*24 || refs["keys"].Length != 4*8 || refs["keys"].Offset != 192 {
		t.Errorf("refs = %v", refs)
	}
	if !l.Has(keys) || l.Has(Slots) || l.Has(Misses) {
		t.Error("Has disagrees with the fields laid out")
	}
	other := NewArray[float32]("keys", func(Shape) int64 { return 1 })
	if _, err := NewLayoutFor(testShape(), []Field{keys, other}); err == nil || !strings.Contains(err.Error(), `"keys" declared twice`) {
		t.Errorf("two sizes for one array: %v", err)
	}
}

// Arrays are typed views of the buffer; stats are typed counts in the
// header; a batch without a field says which.
func TestFieldsOfABatch(t *testing.T) {
	l, err := NewLayoutFor(testShape(), []Field{IDs, Hits, Dense})
	if err != nil {
		t.Fatal(err)
	}
	r, err := region.Create("field-test", l.Size)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var m region.Mapper
	defer m.Close()
	b := New(&Header{Seq: 3, Buffer: r.Name(), Refs: l.Refs(r.Name())}, &m)

	ids, err := IDs.View(b)
	if err != nil || len(ids) != 24 {
		t.Fatalf("ids: %d, %v", len(ids), err)
	}
	ids[5] = 42
	if again, _ := b.Int64s(IDs); again[5] != 42 {
		t.Error("Int64s and View see different memory")
	}
	if h, err := Hits.View(b); err != nil || len(h) != 24 {
		t.Errorf("hits: %d, %v", len(h), err)
	}
	if _, err := b.Int64s(Dense); err == nil {
		t.Error("Int64s of a float32 array")
	}
	if _, err := Slots.View(b); err == nil || !strings.Contains(err.Error(), `batch 3 has no "slots" array`) {
		t.Errorf("missing array: %v", err)
	}

	if _, ok := Misses.Get(b); ok {
		t.Error("an unset stat is there")
	}
	if _, err := Misses.Need(b, "exchange"); err == nil || !strings.Contains(err.Error(), "batch 3 carries no misses stat: exchange needs") {
		t.Errorf("Need of an unset stat: %v", err)
	}
	Misses.Set(b, 4)
	Misses.Add(b, 3)
	if v, ok := Misses.Get(b); !ok || v != 7 || b.Stats["misses"] != 7 {
		t.Errorf("misses = %d, %v", v, ok)
	}
	if Key(VictimCount) == Key(Victims) {
		t.Error("the victims stat and the victims array are one field")
	}
}
