package kernel_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

// gather is two bags over two tables: table 0 (4 rows of dim 2, stride 3)
// with bags {1, 3} and {}, table 1 (2 rows of dim 1) with bags {0} and {1}.
func gather(a *regiontest.Arena) *kernel.GatherReduceRequest {
	return &kernel.GatherReduceRequest{
		Tables: []kernel.Table{
			{Data: a.Alloc(4 * 12), Rows: 4, Dim: 2, Stride: 3},
			{Data: a.Alloc(4 * 2), Rows: 2, Dim: 1},
		},
		Bags: kernel.Bags{Batch: 2, Indices: a.Int64s([]int64{1, 3, 0, 1}), IndexStart: []int64{0, 2},
			Offsets: a.Int64s([]int64{0, 2, 2, 0, 1, 2})},
		Out: a.Alloc(4 * 6),
	}
}

func TestGatherReduceView(t *testing.T) {
	a := regiontest.New(t, 1<<12)
	var m region.Mapper
	defer m.Close()
	v, err := gather(a).View(&m)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 2 || len(v[0].Data) != 12 || v[0].Stride != 3 || !slices.Equal(v[0].Bag(0), []int64{1, 3}) || len(v[0].Bag(1)) != 0 ||
		!slices.Equal(v[1].Bag(1), []int64{1}) || len(v[0].Pooled) != 4 || len(v[1].Pooled) != 2 || v[0].Lookups() != 2 {
		t.Fatalf("views %+v", v)
	}
	for name, bad := range map[string]func(r *kernel.GatherReduceRequest){
		"unknown reduce":     func(r *kernel.GatherReduceRequest) { r.Reduce = 7 },
		"index starts":       func(r *kernel.GatherReduceRequest) { r.Bags.IndexStart = r.Bags.IndexStart[:1] },
		"row outside table":  func(r *kernel.GatherReduceRequest) { region.Int64s(a.Bytes(r.Bags.Indices))[1] = 4 },
		"offsets decrease":   func(r *kernel.GatherReduceRequest) { region.Int64s(a.Bytes(r.Bags.Offsets))[1] = -1 },
		"short out":          func(r *kernel.GatherReduceRequest) { r.Out.Length = 8 },
		"stride below dim":   func(r *kernel.GatherReduceRequest) { r.Tables[0].Stride = 1 },
		"short table data":   func(r *kernel.GatherReduceRequest) { r.Tables[1].Rows = 3 },
		"negative batch":     func(r *kernel.GatherReduceRequest) { r.Bags.Batch = -1 },
		"missing offsets":    func(r *kernel.GatherReduceRequest) { r.Bags.Offsets = region.Ref{} },
		"missing table data": func(r *kernel.GatherReduceRequest) { r.Tables[0].Data = region.Ref{} },
	} {
		r := gather(a)
		bad(r)
		if _, err := r.View(&m); !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
}

func TestUpdateViews(t *testing.T) {
	a := regiontest.New(t, 1<<12)
	var m region.Mapper
	defer m.Close()
	g := gather(a)
	scatter := &kernel.ScatterRequest{Tables: g.Tables, Bags: g.Bags, Grads: g.Out, LearningRate: 0.1}
	if _, err := scatter.View(&m); err != nil {
		t.Fatal(err)
	}
	scatter.Optimizer = 9
	if _, err := scatter.View(&m); !errors.Is(err, plugin.ErrUnsupported) {
		t.Errorf("unknown optimizer: %v, want ErrUnsupported", err)
	}
	// Adagrad needs a stride of 2·dim: table 0's 3 is too narrow.
	scatter.Optimizer = kernel.Adagrad
	if _, err := scatter.View(&m); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("narrow stride for adagrad: %v", err)
	}
	rowStart, gradStart, rowBytes, gradBytes := kernel.CoalescedLayout(g.Tables, []int64{2, 2})
	out := kernel.Coalesced{Rows: a.Alloc(rowBytes), Grads: a.Alloc(gradBytes), RowStart: rowStart, GradStart: gradStart}
	ec, err := (&kernel.ExpandCoalesceRequest{Tables: g.Tables, Bags: g.Bags, Grads: g.Out, Out: out}).View(&m)
	if err != nil {
		t.Fatal(err)
	}
	if ec.Tables[0].Data != nil || len(ec.Out[0].Rows) != 2 || len(ec.Out[0].Grads) != 4 || len(ec.Out[1].Rows) != 2 {
		t.Fatalf("expand-coalesce view %+v", ec)
	}
	region.Int64s(a.Bytes(out.Rows))[2] = 1 // table 1's first row
	out.Counts = []int64{0, 1}
	apply := &kernel.ApplyRequest{Tables: g.Tables, Coalesced: out, LearningRate: 0.1}
	av, err := apply.View(&m)
	if err != nil {
		t.Fatal(err)
	}
	if len(av.Data[0]) != 12 || !slices.Equal(av.Coalesced[1].Rows, []int64{1}) || len(av.Coalesced[0].Rows) != 0 {
		t.Fatalf("apply view %+v", av)
	}
	region.Int64s(a.Bytes(out.Rows))[2] = 2 // outside table 1
	if _, err := apply.View(&m); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("row outside its table: %v", err)
	}
	apply.Coalesced.RowStart = []int64{0, 0}
	apply.Coalesced.Counts = []int64{1, 1}
	if _, err := apply.View(&m); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("overlapping blocks: %v", err)
	}
}

// A compact table (Index set): the views name positions, not rows, for
// gather and apply; a row not stored is refused.
func TestCompactTableViews(t *testing.T) {
	a := regiontest.New(t, 1<<12)
	var m region.Mapper
	defer m.Close()
	r := gather(a)
	// Table 0's rows 3 and 1 are stored at positions 0 and 1.
	index := a.Alloc(4 * 4)
	copy(region.Int32s(a.Bytes(index)), []int32{0, 2, 0, 1})
	r.Tables[0].Index = index
	v, err := r.View(&m)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v[0].Bag(0), []int64{1, 0}) || !slices.Equal(v[1].Bag(1), []int64{1}) {
		t.Fatalf("bags %v %v, want positions [1 0] and rows [1]", v[0].Bag(0), v[1].Bag(1))
	}
	if got := region.Int64s(a.Bytes(r.Bags.Indices)); !slices.Equal(got, []int64{1, 3, 0, 1}) {
		t.Fatalf("the request's indices were changed: %v", got)
	}
	region.Int32s(a.Bytes(index))[3] = 0 // row 3 no longer stored
	if _, err := r.View(&m); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Fatalf("a row not stored: %v, want ErrInvalidRequest", err)
	}
}
