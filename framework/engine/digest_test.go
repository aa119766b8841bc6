package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/modeltest"
)

// denseHost is the plugin host with the model replaced by one whose dense
// parameters the test sets.
type denseHost struct {
	*pluginhost.Host
	params []float32
}

func (h denseHost) Model(context.Context, string) (model.Model, error) {
	return &modeltest.Mock{DigestF: func(context.Context) ([]byte, error) {
		// As the built-in models digest theirs: sha256 over the
		// parameters in order, little-endian float32.
		d := sha256.New()
		if err := binary.Write(d, binary.LittleEndian, h.params); err != nil {
			return nil, err
		}
		return d.Sum(nil), nil
	}}, nil
}

// TestDigestCoversOptimizerStateAndDenseParameters runs the same graph
// (Adagrad, so embedding rows carry optimizer state) three more times,
// each differing from the first by one float at the end of the run: one
// optimizer-state float of one touched embedding row, or one dense
// parameter of the model, by one ulp. Each changes the run's digest; an
// unchanged run keeps it.
func TestDigestCoversOptimizerStateAndDenseParameters(t *testing.T) {
	t.Parallel()
	const table, row = 1, 7
	run := func(t *testing.T, perturb string) string {
		t.Helper()
		e := newEnv(t, "embedding:\n  optimizer: adagrad\n", `
  gen: {kind: gen, out: [a], batches: 3}
  relay: {kind: relay, in: a, out: [b]}
  sink: {kind: sink, in: b}
`)
		params := []float32{0.5, -0.25, 1.5}
		if perturb == "dense" {
			params[1] = math.Nextafter32(params[1], 1)
		}
		e.opts.Plugins = denseHost{Host: e.opts.Plugins.(*pluginhost.Host), params: params}
		// The test stages train nothing: the sink's Finish stands in for
		// training, touching one row (every run) and moving one of its
		// optimizer-state floats (the perturbed run).
		e.rec.atFinish = func(name string, set stage.Settings) error {
			if name != "sink" {
				return nil
			}
			tabs := set.Tables
			if tabs.Stride <= tabs.Dim {
				return fmt.Errorf("stride %d, dim %d: rows carry no optimizer state", tabs.Stride, tabs.Dim)
			}
			r := tabs.Row(table, row)
			if perturb == "state" {
				r[tabs.Dim] = math.Nextafter32(r[tabs.Dim], 2)
			}
			return nil
		}
		res, err := e.run(t)
		if err != nil {
			t.Fatal(err)
		}
		return res.Digest
	}
	base := run(t, "")
	if again := run(t, ""); again != base {
		t.Fatalf("the same run twice: digests %s and %s", base, again)
	}
	if run(t, "state") == base {
		t.Error("one optimizer-state float of a touched row changed, the digest did not")
	}
	if run(t, "dense") == base {
		t.Error("one dense parameter changed, the digest did not")
	}
}
