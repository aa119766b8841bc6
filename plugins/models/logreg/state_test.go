package logreg_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/flowrun/flowrun/plugins/models/logreg"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// TestStateRoundTrip: a model given another's state has its digest; a
// state cut short is refused and changes nothing.
func TestStateRoundTrip(t *testing.T) {
	ctx := context.Background()
	setup := func(seed uint64) model.Model {
		m := logreg.New()
		if err := m.Configure(ctx, plugin.Setup{Seed: seed, Tables: []plugin.Table{{Rows: 10, Dim: 4}},
			BatchSize: 4, Lookups: 1, DenseFeatures: 2}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	digest := func(m model.Model) []byte {
		d, err := m.Digest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := setup(1), setup(2)
	if bytes.Equal(digest(a), digest(b)) {
		t.Fatal("two seeds, one digest: the test proves nothing")
	}
	st, err := model.StateOf(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	before := digest(b)
	if err := model.SetStateOf(ctx, b, st[:len(st)-1]); err == nil || !bytes.Equal(digest(b), before) {
		t.Fatalf("a short state: %v", err)
	}
	if err := model.SetStateOf(ctx, b, st); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(digest(a), digest(b)) {
		t.Fatal("the restored model's digest differs from the saved one's")
	}
}
