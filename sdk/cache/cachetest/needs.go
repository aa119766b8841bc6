package cachetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// unknownOption is an option no policy knows.
var unknownOption = plugintest.UnknownOptionKey(plugin.KindCache)

// testNeeds checks a policy's Needs (cache.Declarer): it answers before
// Configure; it changes nothing, so that a policy asked between its plans
// plans as one never asked (the suite's batches depend only on the setup
// and the requests, as the host's digests require); it declares no
// negative window; and it refuses an unknown option as Configure does,
// with a plugin.FieldError naming the key. A policy that declares nothing
// answers the zero Needs; over a binary the suite cannot tell the two
// apart, so there an unknown option is checked only when Needs refuses it.
func (c config) testNeeds(t *testing.T, connect func(*testing.T) cache.Cache) {
	setup := c.setup(t)
	bad := setup
	bad.Options = c.setupOptions(t, map[string]any{unknownOption: true})
	asked, quiet := connect(t), connect(t)
	c.checkNeeds(t, asked, setup, bad)
	plugintest.Configured(t, asked, setup)
	plugintest.Configured(t, quiet, setup)
	rng := rand.New(rand.NewPCG(9, 10))
	for seq := uint64(1); seq <= 4; seq++ {
		ids := c.draw(rng, false)
		got := plan(t, asked, newBatch(t, seq, ids), c.capacity, nil)
		want := plan(t, quiet, newBatch(t, seq, ids), c.capacity, nil)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("batch %d: planned otherwise by the policy asked for its Needs than by one never asked; Needs must not change the policy's state", seq)
		}
		if seq == 2 {
			c.checkNeeds(t, asked, setup, bad)
		}
	}
}

// checkNeeds asks p for its Needs under setup, which it must accept, and
// under bad, which has an unknown option.
func (c config) checkNeeds(t *testing.T, p cache.Cache, setup, bad plugin.Setup) {
	t.Helper()
	ctx := context.Background()
	n, err := cache.NeedsOf(ctx, p, setup)
	if err != nil {
		t.Fatalf("Needs(%s): %v", setup.Options, err)
	}
	if n.Past < 0 || n.Future < 0 || n.ProfileBatches < 0 {
		t.Errorf("Needs = %+v: windows and profile batches must be ≥ 0", n)
	}
	if c.holds && c.declares && !n.HoldsWindows {
		t.Errorf("Needs = %+v: the policy is checked WithWindows but does not declare HoldsWindows, so a host would refuse it in a pipelined graph", n)
	}
	_, err = cache.NeedsOf(ctx, p, bad)
	switch key, ok := plugin.FieldOf(err); {
	case err == nil && c.declares:
		t.Errorf("Needs accepted the unknown option %q; decode options as Configure does (plugin.DecodeOptions)", unknownOption)
	case err == nil:
	case !errors.Is(err, plugin.ErrInvalidConfig) || !ok || key != unknownOption:
		t.Errorf("Needs with the unknown option %q: err = %v (key %q), want a plugin.FieldError for that key", unknownOption, err, key)
	}
}
