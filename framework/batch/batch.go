// Package batch is the unit that flows through a graph: a sequence number,
// typed arrays (IDs, bag offsets, dense features, labels, pooled
// embeddings, gradients, cache decisions) that live in a shared-memory
// buffer, and typed stats. Between stages only a small Header travels: the
// sequence number, the refs of the arrays and the stats, never the arrays
// themselves.
//
// The batch's fields (Field: Array and Stat) are declared values, not
// strings: a stage kind declares the ones it produces and consumes, the
// graph checks every consumer has a producer upstream, and the Layout of a
// buffer holds only the arrays its graph declares (NewLayoutFor). batch
// imports only framework/config and the SDK's regions; it knows no stage
// kind.
package batch

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/flowrun/flowrun/sdk/region"
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

// Ref returns the ref of an array, or an error naming what is missing.
func (b *Batch) Ref(a Field) (region.Ref, error) {
	r, ok := b.Refs[a.Name()]
	if !ok || a.Kind() != ArrayField {
		return region.Ref{}, fmt.Errorf("batch %d has no %q array", b.Seq, a.Name())
	}
	return r, nil
}

// Bytes returns an array's bytes.
func (b *Batch) Bytes(a Field) ([]byte, error) {
	r, err := b.Ref(a)
	if err != nil {
		return nil, err
	}
	return b.mapper.Bytes(r)
}

// Int64s returns an int64 array; Array.View is the same, typed.
func (b *Batch) Int64s(a Field) ([]int64, error) {
	if _, ok := a.(Array[int64]); !ok {
		return nil, fmt.Errorf("batch %d: %q is not an int64 array", b.Seq, a.Name())
	}
	p, err := b.Bytes(a)
	return region.Int64s(p), err
}

// Float32s returns a float32 array; Array.View is the same, typed.
func (b *Batch) Float32s(a Field) ([]float32, error) {
	if _, ok := a.(Array[float32]); !ok {
		return nil, fmt.Errorf("batch %d: %q is not a float32 array", b.Seq, a.Name())
	}
	p, err := b.Bytes(a)
	return region.Float32s(p), err
}

// SetStat records a count on the batch by name; it travels downstream and
// becomes an attribute of the stage's span. Stages record the stats other
// stages read through their declared Stat (Stat.Set); SetStat is for
// counts named at run time (the per-device and per-primitive times the
// runtime sums).
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
