// Package batch is the unit that flows through a graph: a sequence number
// and named arrays (IDs, bag offsets, dense features, labels, pooled
// embeddings, gradients, cache decisions) that live in a shared-memory
// buffer. Between stages only a small Header travels: the sequence number
// and the refs of the arrays, never the arrays themselves.
package batch

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/flowrun/flowrun/sdk/region"
)

// Array names of a batch buffer.
const (
	IDs     = "ids"     // int64 [table][sample·lookup]
	Offsets = "offsets" // int64 [table][sample+1], relative to the table's first ID
	Dense   = "dense"   // float32 [sample][dense feature]
	Labels  = "labels"  // float32 [sample]
	Slots   = "slots"   // int64, one per ID: the cache slot (or -1)
	Hits    = "hits"    // uint8, one per ID: 1 when the row was cached
	Victims = "victims" // int64 (table, row, slot) triples
	Pooled  = "pooled"  // float32 [table][sample][dim]
	Grads   = "grads"   // float32 [table][sample][dim]
	Scores  = "scores"  // float32 [sample]

	// Cache traffic staged by collect for insert (ScratchPipe's [Collect]
	// → [Exchange] → [Insert]).
	MissRows   = "miss_rows"   // float32 [miss][stride]: whole host rows (values, optimizer state) of the missed IDs, one per distinct (table, row)
	MissIndex  = "miss_index"  // int64 (table, row, slot) triples, parallel to MissRows
	VictimRows = "victim_rows" // float32 [victim][stride]: whole Storage rows of the victims, parallel to Victims

	// Tensor Casting's casted index arrays (Algorithm 2), laid out like
	// IDs: table t's entries start at IndexStart[t].
	CastSrc  = "cast_src"  // int64: the bag whose gradient each sorted lookup gathers
	CastDst  = "cast_dst"  // int64: the coalesced gradient each sorted lookup reduces into
	CastRows = "cast_rows" // int64: the row each coalesced gradient updates, one per unique row

	TopK = "topk" // int64 [k]: sample indices of the k highest scores, best first
)

// Header is what travels on the bus for a batch.
type Header struct {
	Seq uint64 `json:"seq"`
	// Eval marks a held-out batch: scored, never trained on.
	Eval bool `json:"eval,omitempty"`
	// Buffer names the buffer set the batch's arrays live in.
	Buffer string                `json:"buffer"`
	Refs   map[string]region.Ref `json:"refs"`
	// Stats are small counts stages hand downstream (misses, victims).
	Stats map[string]int64 `json:"stats,omitempty"`
}

// Marshal encodes the header for the bus.
func (h *Header) Marshal() ([]byte, error) { return json.Marshal(h) }

// Unmarshal decodes a header from the bus.
func Unmarshal(data []byte) (*Header, error) {
	var h Header
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("decode batch header: %w", err)
	}
	return &h, nil
}

// Batch is a header with its arrays resolved.
type Batch struct {
	Header
	mapper *region.Mapper
}

// New returns a batch for h whose arrays are resolved through m.
func New(h *Header, m *region.Mapper) *Batch {
	if h.Stats == nil {
		h.Stats = make(map[string]int64)
	}
	return &Batch{Header: *h, mapper: m}
}

// Ref returns the ref of a named array, or an error naming what is missing.
func (b *Batch) Ref(name string) (region.Ref, error) {
	r, ok := b.Refs[name]
	if !ok {
		return region.Ref{}, fmt.Errorf("batch %d has no %q array", b.Seq, name)
	}
	return r, nil
}

// Bytes returns a named array's bytes.
func (b *Batch) Bytes(name string) ([]byte, error) {
	r, err := b.Ref(name)
	if err != nil {
		return nil, err
	}
	return b.mapper.Bytes(r)
}

// Int64s returns a named int64 array.
func (b *Batch) Int64s(name string) ([]int64, error) {
	p, err := b.Bytes(name)
	return region.Int64s(p), err
}

// Float32s returns a named float32 array.
func (b *Batch) Float32s(name string) ([]float32, error) {
	p, err := b.Bytes(name)
	return region.Float32s(p), err
}

// SetStat records a count on the batch; it travels downstream and becomes
// an attribute of the stage's span.
func (b *Batch) SetStat(name string, v int64) { b.Stats[name] = v }

// StatNames lists the batch's stats in a stable order.
func (b *Batch) StatNames() []string {
	names := make([]string, 0, len(b.Stats))
	for k := range b.Stats {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
