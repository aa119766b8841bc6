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
	// Memory, when the policy declares it, is its cache's memory per table
	// of the setup (one entry per setup.Tables, in order), for the
	// mixed-precision paper's Eq. 2: the cache terms M_C + M_tags + M_cnt
	// beside the host tables' own bytes (results.json's
	// memory_compression.eq2). Nil: not declared, and the host reports no
	// Eq. 2 figure. A policy declares what its design costs (the paper's
	// arrays), not its Go heap.
	Memory []TableMemory `json:"memory,omitempty"`
}

// TableMemory is one table's cache memory as a policy declares it in
// Needs.Memory: CachedRows rows of CachedRowBytes each, and RowBytes for
// every embedding row of the table, cached or not.
type TableMemory struct {
	// CachedRows is how many of the table's rows the cache holds at most
	// (its geometry, not a run's occupancy).
	CachedRows int64 `json:"cached_rows"`
	// CachedRowBytes is what one cached row costs: its values as the cache
	// stores them (4·dim for FP32, Eq. 2's M_C) and the policy's own
	// per-row bookkeeping (a 4-byte tag, M_tags).
	CachedRowBytes int64 `json:"cached_row_bytes"`
	// RowBytes is the policy's bookkeeping per embedding row of the table
	// (LFU's 4-byte access count, M_cnt; 0 when it keeps none).
	RowBytes int64 `json:"row_bytes,omitempty"`
}

// Bytes is the table's cache memory for a table of rows embedding rows:
// CachedRows·CachedRowBytes + rows·RowBytes.
func (m TableMemory) Bytes(rows int64) int64 {
	return m.CachedRows*m.CachedRowBytes + rows*m.RowBytes
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
