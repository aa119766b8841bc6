package score

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
	"github.com/flowrun/flowrun/sdk/model"
)

func TestScoreIsForwardOnly(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{})
	s, err := stagetest.Create(t, NewFactory(), e.Set, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before, err := e.Set.Model.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	row := slices.Clone(e.Set.Tables.Row(0, 0))
	var tables []float32
	for tab := range e.Set.Tables.Len() {
		for r := range e.Set.Tables.Rows {
			tables = append(tables, e.Set.Tables.Row(tab, r)...)
		}
	}

	b := e.Batch(t, 0)
	e.Load(t, b)
	stagetest.Process(t, s, b)

	scores, _ := b.Float32s(batch.Scores)
	n := e.Set.Layout.BatchSize
	for i, p := range scores[:n] {
		if !(p > 0 && p < 1) {
			t.Errorf("score %d = %v, want a probability", i, p)
		}
	}
	after, _ := e.Set.Model.Digest(ctx)
	if !slices.Equal(before, after) {
		t.Error("scoring changed the dense model")
	}
	var now []float32
	for tab := range e.Set.Tables.Len() {
		for r := range e.Set.Tables.Rows {
			now = append(now, e.Set.Tables.Row(tab, r)...)
		}
	}
	if !slices.Equal(tables, now) || !slices.Equal(row, e.Set.Tables.Row(0, 0)) {
		t.Error("scoring changed the embedding tables")
	}
	if b.Stats["scored"] != int64(n) || b.Stats["gather_bytes"] <= 0 || b.Stats["modeled_ns"] <= 0 {
		t.Errorf("stats %v", b.Stats)
	}

	// The same scores as a forward step of the model on the same pooled
	// embeddings: score adds nothing of its own.
	want := slices.Clone(scores[:n])
	pooled, _ := b.Ref(batch.Pooled)
	dense, _ := b.Ref(batch.Dense)
	labels, _ := b.Ref(batch.Labels)
	out, _ := b.Ref(batch.Scores)
	if _, err := e.Set.Model.Step(ctx, &model.StepRequest{Batch: n, Pooled: pooled, Dense: dense, Labels: labels, Scores: out}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(want, scores[:n]) {
		t.Error("scores differ from a plain forward step")
	}
}

func TestScoreWithoutDevices(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{})
	s, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) {
		c.(*Config).HostDevice, c.(*Config).ComputeDevice = "", ""
	})
	if err != nil {
		t.Fatal(err)
	}
	b := e.Batch(t, 1)
	e.Load(t, b)
	stagetest.Process(t, s, b)
	if _, ok := b.Stats["modeled_ns"]; ok {
		t.Error("modeled_ns with no device")
	}
}

func TestConfig(t *testing.T) {
	c := NewFactory().CreateDefaultConfig().(*Config)
	c.Reduce = "max"
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "reduce: ") {
		t.Errorf("err = %v", err)
	}
	e := stagetest.New(t, stagetest.Options{})
	if _, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).ComputeDevice = "tpu" }); err == nil || !strings.Contains(err.Error(), `"tpu"`) {
		t.Errorf("unknown device: err = %v", err)
	}
}
