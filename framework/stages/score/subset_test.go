package score

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
)

// TestScoreSurvivors: a stage ranking an upstream filter's survivors
// gives each the score the whole-query stage gives it, bit for bit, NaN to
// every dropped candidate, and is charged for the survivors only.
func TestScoreSurvivors(t *testing.T) {
	d := stagetest.Small()
	d.BatchSize = 16
	e := stagetest.New(t, stagetest.Options{Dataset: d})
	whole := stagetest.MustCreate(t, NewFactory(), e.Set)
	some, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).Candidates = Survivors })
	if err != nil {
		t.Fatal(err)
	}
	b := e.Batch(t, 0)
	e.Load(t, b)
	stagetest.Process(t, whole, b)
	scores, _ := b.Float32s(batch.Scores)
	want := slices.Clone(scores[:16])
	wantStats := map[string]int64{"gather_bytes": b.Stats["gather_bytes"], "modeled_ns": b.Stats["modeled_ns"]}

	topk, _ := b.Int64s(batch.TopK)
	for _, surv := range [][]int64{
		{15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, // every candidate, best first
		{9, 2, 13},
		{0},
	} {
		copy(topk, surv)
		b.SetStat("kept", int64(len(surv)))
		clear(scores)
		stagetest.Process(t, some, b)
		for i := range 16 {
			if slices.Contains(surv, int64(i)) {
				if math.Float32bits(scores[i]) != math.Float32bits(want[i]) {
					t.Errorf("survivors %v: candidate %d scored %v, the whole query %v", surv, i, scores[i], want[i])
				}
			} else if !math.IsNaN(float64(scores[i])) {
				t.Errorf("survivors %v: dropped candidate %d scored %v, want NaN", surv, i, scores[i])
			}
		}
		if b.Stats["scored"] != int64(len(surv)) {
			t.Errorf("survivors %v: scored %d", surv, b.Stats["scored"])
		}
		if len(surv) == 16 {
			if b.Stats["gather_bytes"] != wantStats["gather_bytes"] || b.Stats["modeled_ns"] != wantStats["modeled_ns"] {
				t.Errorf("every survivor: stats %v, the whole query %v", b.Stats, wantStats)
			}
		} else if b.Stats["gather_bytes"] >= wantStats["gather_bytes"] || b.Stats["modeled_ns"] >= wantStats["modeled_ns"] {
			t.Errorf("survivors %v: stats %v, not below the whole query's %v", surv, b.Stats, wantStats)
		}
	}

	// A batch no filter passed through, and a bad survivor: clear errors.
	nb := e.Batch(t, 1)
	e.Load(t, nb)
	if err := some.(stage.Stage).Process(context.Background(), nb); err == nil || !strings.Contains(err.Error(), "kept") {
		t.Errorf("no survivors: err = %v", err)
	}
	copy(topk, []int64{3, 3})
	b.SetStat("kept", 2)
	if err := some.(stage.Stage).Process(context.Background(), b); err == nil || !strings.Contains(err.Error(), "distinct") {
		t.Errorf("duplicate survivor: err = %v", err)
	}
	if err := some.(stage.Closer).Close(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestScoreConfigCandidates(t *testing.T) {
	c := NewFactory().CreateDefaultConfig().(*Config)
	c.Candidates = "best"
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "candidates: ") {
		t.Errorf("err = %v", err)
	}
	c.Candidates = Survivors
	if f := c.BatchFields(); len(f.Consumes) != 2 || f.Consumes[0] != batch.TopK {
		t.Errorf("fields %v", f)
	}
}
