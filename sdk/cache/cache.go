// Package cache is the SDK for cache-policy plugins: which embedding rows of
// each table live in fast memory, where each missed row goes, and which rows
// are evicted to make room.
//
// A policy sees one batch per call, for all tables at once (never one ID at
// a time). IDs come in and decisions go out through shared-memory regions
// (sdk/region); the call itself carries only refs and per-table counts.
//
// Write a policy by implementing Cache, then call Serve from main. Check it
// with the conformance suite in sdk/cache/cachetest. In Plan, let
// PlanRequest.View check the request against the run's tables and map its
// arrays (and PlanRequest.FutureIDs its future windows): a malformed request
// is then refused with plugin.ErrInvalidRequest before the policy has
// touched its state. The planning kit sdk/cache/plankit has the parts
// every policy shares (the request guard, the two passes, a slot heap); a
// policy that holds the pipeline's windows, or wants a warm-up profile,
// says so by implementing Declarer.
//
// # Order, windows and what the host guarantees
//
// The host asks for the plan of batch b in sequence order, exactly once per
// batch (held-out batches included), and the plans take effect in that
// order: the slots and victims of batch b are decided with the policy's
// state after batch b−1. The policy's map from row to slot (ScratchPipe's
// Hit-Map) therefore runs ahead of the host's Storage, which changes only
// when a batch reaches its insert stage (ScratchPipe Sec. IV-D).
//
// For each batch b the host guarantees:
//
//   - the rows of b's victims are read from Storage at b's collect and
//     written back to the host tables at b's insert, before any row of b is
//     filled into a slot;
//   - every row b placed in a slot (hits and fills) is in that slot from b's
//     insert until b has trained, provided no batch planned after b evicts
//     the slot before then;
//   - the request for b carries the IDs of the next Options.Future batches
//     in PlanRequest.Future (fewer near the end of the run).
//
// The proviso is the policy's side of the contract. In a sequential graph
// (one batch in flight) every policy meets it. In a pipelined graph, the
// Options.Past batches before b may not have trained when b's collect reads
// its victims, and b's insert writes its victims back to the host after the
// collect of the Options.Future batches after it. A policy that is safe
// there must not evict, at b, a slot one of those past batches uses
// (ScratchPipe's RAW hazards 2 and 3) nor a cached row one of b's Future
// batches looks up (RAW 4): ScratchPipe's Hold mask. Policies that hold no
// window (LRU, LFU, ...) are correct only in sequential graphs.
package cache

import (
	"context"

	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// Cache is a cache policy.
type Cache interface {
	plugin.Base
	// Plan decides, for every ID of a batch, whether it hits and which slot
	// of its table's cache it occupies. It must write every entry of the
	// request's Slots and Hits, and Victims[0:3*PlanResult.Victims].
	Plan(ctx context.Context, req *PlanRequest) (*PlanResult, error)
}

// PlanRequest is one batch's IDs. All arrays are int64 unless said.
type PlanRequest struct {
	// Seq is the batch's sequence number from the loader.
	Seq uint64
	// IDs are the row IDs of every table's lookups, table after table.
	IDs region.Ref
	// TableOffsets has one entry per table plus one: table t's IDs are
	// IDs[TableOffsets[t]:TableOffsets[t+1]] (in elements, not bytes).
	TableOffsets []int64
	// Future holds the IDs of the batches that follow this one, in sequence
	// order: Options.Future of them, fewer (or none) near the end of the
	// run or when the host sends no future window. Each is laid out like
	// IDs, with the same TableOffsets. A policy must accept Future being
	// shorter than the window it wants, and must not write to it. The host
	// will later request plans for exactly these batches, in this order.
	Future []Window
	// Slots (out) receives one entry per ID: the cache slot within its table
	// that holds the row after this batch's insert, or -1 when the policy
	// leaves the row uncached (a bypass).
	Slots region.Ref
	// Hits (out, one byte per ID) receives 1 when the row was already
	// cached before this batch, else 0.
	Hits region.Ref
	// Victims (out) receives (table, row, slot) triples, one per row evicted
	// by this batch, so the host can write them back before reusing a slot.
	// It has room for one triple per ID.
	Victims region.Ref
}

// TableStats counts one table's outcomes for a batch. Hits and Misses count
// lookups (duplicates included), Evictions counts rows.
type TableStats struct {
	Hits      int64
	Misses    int64
	Evictions int64
	// DistinctHits and DistinctMisses count the batch's distinct rows
	// (each row once, however many lookups it has): the unit of the
	// mixed-precision cache paper's hit rate. A policy may fill them with
	// its own definition of a distinct row's hit; plankit.Guard fills them,
	// when a policy leaves both 0, from the hit bytes (a row hits when its
	// lookups do).
	DistinctHits   int64
	DistinctMisses int64
	// HotLookups counts the lookups (duplicates included) of rows in a
	// static part the policy never evicts (HECA's hot part): over Hits +
	// Misses, the hot share. 0 for a policy without one.
	HotLookups int64
}

// PlanResult is a policy's answer for one batch.
type PlanResult struct {
	// Tables has one entry per table.
	Tables []TableStats
	// Victims is the number of triples written to the request's Victims.
	Victims int64
}

// Window is one future batch's IDs, as a policy sees them ahead of its plan.
type Window struct {
	// Seq is the batch's sequence number.
	Seq uint64
	// IDs are the batch's row IDs, laid out like PlanRequest.IDs (the
	// request's TableOffsets apply).
	IDs region.Ref
}

// Options are the options every cache receives in Setup.Options, besides
// its own. Embed Options in a policy's options struct (encoding/json inlines
// an embedded struct's fields), so that plugin.DecodeOptions accepts every
// key a host fills.
type Options struct {
	// Capacity is the number of rows per table the cache may hold; the host
	// fills it from the graph's cache.size and always sends it.
	Capacity int64 `json:"capacity"`
	// Past is how many batches before batch b may not have finished
	// training when b's collect reads its victims from Storage: the
	// pipeline's past window (ScratchPipe: 3, the distance from [Collect]
	// to [Train]). The host sends it when it is not 0; 0 means a
	// sequential graph.
	Past int `json:"past,omitempty"`
	// Future is how many future batches' IDs the host sends with every
	// PlanRequest (ScratchPipe: 2, the distance from [Collect] to [Insert]).
	// The host sends it when it is not 0.
	Future int `json:"future,omitempty"`
	// Frequencies is the host's access-frequency profile, sent when the
	// policy's Needs asked for one (ProfileBatches > 0): a region of int64
	// (table, row, count) triples, table by table and rows ascending, over
	// the first ProfileBatches training batches. It is valid only during
	// Configure.
	Frequencies *region.Ref `json:"frequencies,omitempty"`
}
