package train

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
	"github.com/flowrun/flowrun/sdk/model"
)

// diverging is a model whose step reports a given loss after doing the
// real step, as a model that has blown up would.
type diverging struct {
	model.Model
	loss float64
}

func (d *diverging) Step(ctx context.Context, req *model.StepRequest) (*model.StepResult, error) {
	res, err := d.Model.Step(ctx, req)
	if err != nil {
		return nil, err
	}
	res.Loss = d.loss
	return res, nil
}

// A step whose loss is NaN or infinite stops the stage with an error that
// names the loss and the learning rates to lower; a finite loss does not,
// and the loss curve never holds a NaN.
func TestTrainStopsOnADivergedLoss(t *testing.T) {
	for _, loss := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0.7} {
		e := stagetest.New(t, stagetest.Options{Sequential: true})
		e.Set.Model = &diverging{Model: e.Set.Model, loss: loss}
		s := newTrainStage(t, e, SourceHost)
		b := e.Batch(t, 0)
		e.Load(t, b)
		err := s.Process(context.Background(), b)
		finite := !math.IsNaN(loss) && !math.IsInf(loss, 0)
		switch {
		case finite && err != nil:
			t.Errorf("loss %v: %v", loss, err)
		case !finite && (err == nil || !strings.Contains(err.Error(), "training diverged") || !strings.Contains(err.Error(), "learning_rate")):
			t.Errorf("loss %v: %v, want a diverged-training error naming the learning rates", loss, err)
		}
		for _, p := range e.Set.Metrics.Series("loss") {
			if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
				t.Errorf("loss %v: the loss curve holds %v", loss, p.Value)
			}
		}
	}
}
