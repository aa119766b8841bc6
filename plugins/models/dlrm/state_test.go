package dlrm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/plugins/models/dlrm"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

func configured(t *testing.T, seed uint64, opts json.RawMessage) model.Model {
	t.Helper()
	m := dlrm.New()
	err := m.Configure(context.Background(), plugin.Setup{
		Seed: seed, Tables: []plugin.Table{{Rows: 100, Dim: 4}, {Rows: 100, Dim: 4}},
		BatchSize: 8, Lookups: 1, DenseFeatures: 3, Options: opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func digestOf(t *testing.T, m model.Model) []byte {
	t.Helper()
	d, err := m.Digest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStateRoundTrip: a model given another's state has its digest (SGD
// and Adagrad, whose G is part of it); a state cut short, or of another
// shape, is refused and changes nothing.
func TestStateRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, opts := range []json.RawMessage{rmsmall, adagrad} {
		a, b := configured(t, 1, opts), configured(t, 2, opts)
		if bytes.Equal(digestOf(t, a), digestOf(t, b)) {
			t.Fatal("two seeds, one digest: the test proves nothing")
		}
		st, err := model.StateOf(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		before := digestOf(t, b)
		for _, bad := range [][]byte{st[:len(st)-1], append(bytes.Clone(st), 0), st[:10]} {
			if err := model.SetStateOf(ctx, b, bad); err == nil {
				t.Fatalf("a state of %d bytes (want %d) accepted", len(bad), len(st))
			}
			if !bytes.Equal(digestOf(t, b), before) {
				t.Fatal("a refused state changed the model")
			}
		}
		other := configured(t, 1, json.RawMessage(`{"bottom_mlp": [6, 4], "top_mlp": [4, 1]}`))
		if err := model.SetStateOf(ctx, other, st); err == nil {
			t.Fatal("a state of another shape accepted")
		}
		if err := model.SetStateOf(ctx, b, st); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(digestOf(t, a), digestOf(t, b)) {
			t.Fatal("the restored model's digest differs from the saved one's")
		}
	}
}
