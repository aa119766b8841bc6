package model_test

import (
	"context"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/modeltest"
)

// TestLayersOverGRPC: a step's layer shapes reach the host unchanged, and
// a model that lists none arrives with none (the host then prices FLOPs).
func TestLayersOverGRPC(t *testing.T) {
	want := []device.Layer{{M: 4096, K: 13, N: 64}, {M: 4096, K: 355, N: 1}}
	for _, layers := range [][]device.Layer{want, nil} {
		impl := &modeltest.Mock{StepF: func(context.Context, *model.StepRequest) (*model.StepResult, error) {
			return &model.StepResult{Loss: 0.5, FLOPs: 7, Layers: layers}, nil
		}}
		res, err := overGRPC(t, impl).Step(context.Background(), &model.StepRequest{Batch: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Layers, layers) || res.FLOPs != 7 {
			t.Errorf("layers %v, flops %d arrived as %v, %d", layers, 7, res.Layers, res.FLOPs)
		}
	}
}
