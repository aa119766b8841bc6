package modeltest

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// runContract runs the model's own contract tests (plugintest.Suite runs
// Info and UnknownOption); connect returns a fresh, unconfigured model
// behind real gRPC.
func (c config) runContract(t *testing.T, connect func(*testing.T) model.Model) {
	t.Helper()
	k := &contract{config: c, connect: connect}
	t.Run("StepBeforeConfigure", k.stepBeforeConfigure)
	t.Run("TrainingLowersLoss", k.trainingLowersLoss)
	t.Run("ForwardOnlyChangesNothing", k.forwardOnlyChangesNothing)
	t.Run("DigestDeterministic", k.digestDeterministic)
	t.Run("InvalidRequest", k.invalidRequest)
}

// contract is one run of the contract: the configuration and the models'
// source.
type contract struct {
	config
	connect func(*testing.T) model.Model
}

// configured is a fresh model, configured with the suite's Setup and seed.
func (k *contract) configured(t *testing.T, seed uint64) model.Model {
	t.Helper()
	return plugintest.Configured(t, k.connect(t), k.setup(seed))
}

// digest is m's digest, checked to be a sha256.
func digest(t *testing.T, m model.Model) []byte {
	t.Helper()
	d, err := m.Digest(context.Background())
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	if len(d) != 32 {
		t.Fatalf("Digest is %d bytes, want a sha256 (32)", len(d))
	}
	return d
}

// step runs req on m, checked: a finite, non-negative loss.
func step(t *testing.T, m model.Model, req *model.StepRequest) *model.StepResult {
	t.Helper()
	res, err := m.Step(context.Background(), req)
	if err != nil {
		t.Fatalf("Step %d (train %v): %v", req.Seq, req.Train, err)
	}
	if res == nil || math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) || res.Loss < 0 {
		t.Fatalf("Step %d: result %+v, want a finite, non-negative loss", req.Seq, res)
	}
	return res
}

func (k *contract) stepBeforeConfigure(t *testing.T) {
	_, err := k.connect(t).Step(context.Background(), newFixture(t).step(1, true))
	if !errors.Is(err, plugin.ErrNotConfigured) {
		t.Fatalf("Step before Configure: err = %v, want plugin.ErrNotConfigured", err)
	}
}

func (k *contract) trainingLowersLoss(t *testing.T) {
	m, f := k.configured(t, setupSeed), newFixture(t)
	inputs := f.inputs()
	var losses []float64
	for seq := 1; seq <= k.steps; seq++ {
		f.poison()
		res := step(t, m, f.step(uint64(seq), true))
		losses = append(losses, res.Loss)
		checkOutputs(t, seq, f)
	}
	if !slices.Equal(inputs, f.inputs()) {
		t.Error("Step changed its inputs (pooled, dense or labels)")
	}
	first, mid, last := losses[0], losses[len(losses)/2], losses[len(losses)-1]
	if !(mid < first && last < mid) {
		t.Errorf("training on one separable batch does not lower the loss: %v", losses)
	}
}

// checkOutputs checks what training step seq wrote: every PooledGrad entry
// finite and not all zero, every score a probability.
func checkOutputs(t *testing.T, seq int, f *fixture) {
	t.Helper()
	nonzero := false
	for i, g := range f.floats(f.grad) {
		if math.IsNaN(float64(g)) || math.IsInf(float64(g), 0) {
			t.Fatalf("step %d: PooledGrad[%d] = %v; every entry must be written and finite", seq, i, g)
		}
		nonzero = nonzero || g != 0
	}
	if !nonzero {
		t.Fatalf("step %d: PooledGrad is all zeros", seq)
	}
	for i, p := range f.floats(f.scores) {
		if !(p >= 0 && p <= 1) {
			t.Fatalf("step %d: Scores[%d] = %v, want a probability", seq, i, p)
		}
	}
}

func (k *contract) forwardOnlyChangesNothing(t *testing.T) {
	m, f := k.configured(t, setupSeed), newFixture(t)
	step(t, m, f.step(1, true))
	before := digest(t, m)
	f.poison()
	grad := slices.Clone(f.floats(f.grad))
	// The request names the gradient region, so that a model that
	// writes it without Train is caught.
	forward := f.step(2, false)
	forward.PooledGrad = f.grad
	eval := step(t, m, forward)
	if !bytes.Equal(before, digest(t, m)) {
		t.Fatal("a forward-only step (Train false) changed the digest")
	}
	if !slices.EqualFunc(grad, f.floats(f.grad), func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
		t.Error("a forward-only step wrote PooledGrad")
	}
	again := step(t, m, f.step(3, false))
	train := step(t, m, f.step(4, true))
	if eval.Loss != again.Loss {
		t.Errorf("two forward-only steps on one batch: loss %v then %v", eval.Loss, again.Loss)
	}
	if math.Abs(train.Loss-eval.Loss) > 1e-5*math.Max(1, eval.Loss) {
		t.Errorf("training step reports loss %v, forward-only step on the same parameters %v; Loss is the batch loss before the update", train.Loss, eval.Loss)
	}
	if bytes.Equal(before, digest(t, m)) {
		t.Error("a training step left the digest unchanged")
	}
}

func (k *contract) digestDeterministic(t *testing.T) {
	a, b := k.configured(t, setupSeed), k.configured(t, setupSeed)
	if !bytes.Equal(digest(t, a), digest(t, b)) {
		t.Fatal("two models configured with the same Setup have different digests")
	}
	f := newFixture(t)
	for seq := uint64(1); seq <= 3; seq++ {
		step(t, a, f.step(seq, true))
		step(t, b, f.step(seq, true))
	}
	if !bytes.Equal(digest(t, a), digest(t, b)) {
		t.Fatal("two models with the same Setup differ after the same three training steps")
	}
	other := k.configured(t, setupSeed+1)
	if bytes.Equal(digest(t, k.configured(t, setupSeed)), digest(t, other)) {
		t.Fatal("models configured with different seeds have the same digest")
	}
}

func (k *contract) invalidRequest(t *testing.T) {
	m := k.configured(t, setupSeed)
	cases := []struct {
		name   string
		mutate func(*model.StepRequest)
	}{
		{"ShortPooled", func(r *model.StepRequest) { r.Pooled.Length -= 4 }},
		{"MissingLabelsRegion", func(r *model.StepRequest) {
			r.Labels = region.Ref{Region: region.Prefix + "0-0-modeltest-missing", Length: r.Labels.Length}
		}},
		{"ShortPooledGrad", func(r *model.StepRequest) { r.PooledGrad.Length = 4 }},
		{"ShortDense", func(r *model.StepRequest) { r.Dense.Length = 4 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := newFixture(t).step(1, true)
			tc.mutate(req)
			if _, err := m.Step(context.Background(), req); !errors.Is(err, plugin.ErrInvalidRequest) {
				t.Fatalf("err = %v, want plugin.ErrInvalidRequest", err)
			}
		})
	}
}
