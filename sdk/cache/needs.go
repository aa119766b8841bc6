package cache

import (
	"context"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Needs is what a policy declares about itself for one setup, so that the
// host can check a graph against it before anything runs and give the
// policy what it asks for. The zero value is the most cautious policy: it
// holds no window, may bypass, and wants no profile.
type Needs struct {
	// HoldsWindows reports that the policy never evicts, at batch b, a
	// slot one of the Options.Past batches before b uses, nor a cached row
	// one of b's Options.Future batches looks up (ScratchPipe's Hold
	// mask; a policy that never evicts holds them trivially). Only such a
	// policy is exact in a pipelined graph with Storage ("Order, windows
	// and what the host guarantees").
	HoldsWindows bool `json:"holds_windows,omitempty"`
	// Past and Future are the windows the policy holds when they are
	// wider than the host's Options.Past and Options.Future (a policy's
	// own past_window option, say); 0 means the host's.
	Past   int `json:"past,omitempty"`
	Future int `json:"future,omitempty"`
	// NeverBypasses reports that every lookup gets a slot (never -1), so
	// that the cache must hold the worst case of the batches whose rows it
	// keeps at once: every lookup of every batch in Past + 1 + Future a
	// distinct row. The host refuses a smaller capacity up front.
	NeverBypasses bool `json:"never_bypasses,omitempty"`
	// ProfileBatches, when > 0, asks the host for the access frequencies of
	// the first ProfileBatches training batches (a static top-N cache's
	// warm-up profile), handed over in Options.Frequencies.
	ProfileBatches int `json:"profile_batches,omitempty"`
}

// Declarer is the optional interface of a policy that declares its Needs.
// A policy that does not implement it is taken to need nothing and to hold
// no window.
type Declarer interface {
	// Needs says what the policy needs under setup (its own options and
	// the host's Options, without Frequencies), before Configure. It must
	// not change the policy's state, and reports bad options as Configure
	// would (plugin.FieldError).
	Needs(ctx context.Context, setup plugin.Setup) (Needs, error)
}

// NeedsOf asks c for its Needs when it declares them (Declarer), and
// returns the zero Needs when it does not.
func NeedsOf(ctx context.Context, c Cache, setup plugin.Setup) (Needs, error) {
	d, ok := c.(Declarer)
	if !ok {
		return Needs{}, nil
	}
	return d.Needs(ctx, setup)
}
