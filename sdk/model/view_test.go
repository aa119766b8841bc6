package model_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

// Two tables of dims 2 and 1 and one dense feature: 3 pooled floats and 1
// dense float a sample.
var setup = plugin.Setup{Tables: []plugin.Table{{Rows: 10, Dim: 2}, {Rows: 10, Dim: 1}}, DenseFeatures: 1}

func request(a *regiontest.Arena) *model.StepRequest {
	return &model.StepRequest{
		Seq: 5, Batch: 2, Train: true,
		Pooled:     a.Float32s([]float32{1, 2, 3, 4, 5, 6}),
		Dense:      a.Float32s([]float32{7, 8}),
		Labels:     a.Float32s([]float32{0, 1}),
		PooledGrad: a.Alloc(24),
	}
}

func TestStepView(t *testing.T) {
	a := regiontest.New(t, 1<<12)
	var m region.Mapper
	defer m.Close()
	s, err := request(a).View(&m, setup)
	if err != nil {
		t.Fatal(err)
	}
	if s.Batch != 2 || !slices.Equal(s.Pooled, []float32{1, 2, 3, 4, 5, 6}) || !slices.Equal(s.Dense, []float32{7, 8}) ||
		len(s.PooledGrad) != 6 || s.Scores != nil {
		t.Fatalf("step %+v", s)
	}
	// A malformed request is refused, naming its batch.
	for name, bad := range map[string]func(r *model.StepRequest){
		"no batch":          func(r *model.StepRequest) { r.Batch = 0 },
		"short pooled":      func(r *model.StepRequest) { r.Pooled.Length = 20 },
		"unaligned dense":   func(r *model.StepRequest) { r.Dense.Offset++ },
		"missing labels":    func(r *model.StepRequest) { r.Labels = region.Ref{} },
		"label out of 0..1": func(r *model.StepRequest) { region.Float32s(a.Bytes(r.Labels))[0] = 2 },
		"no pooled grad":    func(r *model.StepRequest) { r.PooledGrad = region.Ref{} },
		"short scores":      func(r *model.StepRequest) { r.Scores = a.Alloc(4) },
	} {
		r := request(a)
		bad(r)
		if _, err := r.View(&m, setup); !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if _, err := (*model.StepRequest)(nil).View(&m, setup); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("nil request: %v", err)
	}
}
