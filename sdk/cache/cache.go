// Package cache is the SDK for cache-policy plugins: which embedding rows of
// each table live in fast memory, where each missed row goes, and which rows
// are evicted to make room.
//
// A policy sees one batch per call, for all tables at once (never one ID at
// a time). IDs come in and decisions go out through shared-memory regions
// (sdk/region); the call itself carries only refs and per-table counts.
//
// Write a policy by implementing Cache, then call Serve from main. Check it
// with the conformance suite in sdk/cache/cachetest.
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

// Capacity is read from the plugin's Setup: Options may carry "capacity"
// (rows per table); hosts always send it.

// PlanRequest is one batch's IDs. All arrays are int64 unless said.
type PlanRequest struct {
	// Seq is the batch's sequence number from the loader.
	Seq uint64
	// IDs are the row IDs of every table's lookups, table after table.
	IDs region.Ref
	// TableOffsets has one entry per table plus one: table t's IDs are
	// IDs[TableOffsets[t]:TableOffsets[t+1]] (in elements, not bytes).
	TableOffsets []int64
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
}

// PlanResult is a policy's answer for one batch.
type PlanResult struct {
	// Tables has one entry per table.
	Tables []TableStats
	// Victims is the number of triples written to the request's Victims.
	Victims int64
}

// Options are the options every cache receives in Setup.Options, besides
// its own: the host fills Capacity from the graph's cache.size.
type Options struct {
	// Capacity is the number of rows per table the cache may hold.
	Capacity int64 `json:"capacity"`
}
