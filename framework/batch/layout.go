package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/region"
)

// Layout places a batch's arrays in one buffer. Every array starts on a
// 64-byte boundary so typed views are aligned and do not share cache lines.
type Layout struct {
	Tables, BatchSize, Lookups, Dim, DenseFeatures int
	// Stride is the float32s of a host row, values then optimizer state:
	// the staged rows of the cache traffic (MissRows, VictimRows) are whole
	// rows, so a row's state travels with it.
	Stride int
	// IDsPerTable is the room each table has in IDs (BatchSize·Lookups).
	IDsPerTable int
	offsets     map[string]int64
	sizes       map[string]int64
	Size        int64
}

// NewLayout sizes a batch buffer for a dataset whose host rows are stride
// float32s (0 means d.Dim: no optimizer state).
func NewLayout(d config.Dataset, stride int) *Layout {
	if stride == 0 {
		stride = d.Dim
	}
	l := &Layout{
		Tables: d.Tables, BatchSize: d.BatchSize, Lookups: d.Lookups, Dim: d.Dim, Stride: stride,
		DenseFeatures: d.DenseFeatures, IDsPerTable: d.BatchSize * d.Lookups,
		offsets: make(map[string]int64), sizes: make(map[string]int64),
	}
	ids := int64(d.Tables) * int64(l.IDsPerTable)
	pooled := int64(d.Tables) * int64(d.BatchSize) * int64(d.Dim)
	for _, a := range []struct {
		name  string
		bytes int64
	}{
		{IDs, 8 * ids},
		{Offsets, 8 * int64(d.Tables) * int64(d.BatchSize+1)},
		{Dense, 4 * int64(d.BatchSize) * int64(d.DenseFeatures)},
		{Labels, 4 * int64(d.BatchSize)},
		{Slots, 8 * ids},
		{Hits, ids},
		{Victims, 8 * 3 * ids},
		{Pooled, 4 * pooled},
		{Grads, 4 * pooled},
		{Scores, 4 * int64(d.BatchSize)},
		// Worst case: every ID of the batch a distinct miss evicting a
		// distinct victim. Buffers are sparse files, so a graph that never
		// collects never touches (or pays for) these pages.
		{MissRows, 4 * ids * int64(stride)},
		{MissIndex, 8 * 3 * ids},
		{VictimRows, 4 * ids * int64(stride)},
		{CastSrc, 8 * ids},
		{CastDst, 8 * ids},
		{CastRows, 8 * ids},
		{TopK, 8 * int64(d.BatchSize)},
	} {
		l.offsets[a.name] = l.Size
		l.sizes[a.name] = a.bytes
		l.Size += (a.bytes + 63) &^ 63
	}
	return l
}

// IndexStart is where each table's IDs begin in the IDs array, in elements.
func (l *Layout) IndexStart() []int64 {
	s := make([]int64, l.Tables+1)
	for t := range s {
		s[t] = int64(t) * int64(l.IDsPerTable)
	}
	return s
}

// Refs returns the refs of every array inside the buffer named name.
func (l *Layout) Refs(name string) map[string]region.Ref {
	refs := make(map[string]region.Ref, len(l.offsets))
	for a, off := range l.offsets {
		refs[a] = region.Ref{Region: name, Offset: off, Length: l.sizes[a]}
	}
	return refs
}

// ErrPoolClosed is returned by Acquire after Close.
var ErrPoolClosed = errors.New("batch pool closed")

// Pool is the fixed set of batch buffers a run cycles through. Its size is
// the bound on batches in flight: the source waits in Acquire until a sink
// has released a buffer, so memory stays bounded for any number of batches.
type Pool struct {
	layout *Layout
	free   chan *region.Region
	mu     sync.Mutex
	all    map[string]*region.Region
}

// NewPool creates n buffers for layout.
func NewPool(layout *Layout, n int) (*Pool, error) {
	if n < 1 {
		return nil, fmt.Errorf("batch pool needs at least one buffer, got %d", n)
	}
	p := &Pool{layout: layout, free: make(chan *region.Region, n), all: make(map[string]*region.Region, n)}
	for i := 0; i < n; i++ {
		r, err := region.Create(fmt.Sprintf("batch%d", i), layout.Size)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.all[r.Name()] = r
		p.free <- r
	}
	return p, nil
}

// Acquire takes a free buffer, waiting for one while ctx allows, and
// returns the header of an empty batch in it.
func (p *Pool) Acquire(ctx context.Context, seq uint64) (*Header, error) {
	select {
	case r, ok := <-p.free:
		if !ok {
			return nil, ErrPoolClosed
		}
		return &Header{Seq: seq, Buffer: r.Name(), Refs: p.layout.Refs(r.Name()), Stats: map[string]int64{}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Release returns a batch's buffer to the pool.
func (p *Pool) Release(buffer string) error {
	p.mu.Lock()
	r, ok := p.all[buffer]
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("release: buffer %q is not in the pool", buffer)
	}
	p.free <- r
	return nil
}

// VirtualBytes is the size of every buffer.
func (p *Pool) VirtualBytes() int64 { return int64(p.Cap()) * p.layout.Size }

// AllocatedBytes is the memory the buffers hold, measured as their files'
// blocks: a buffer is sparse and only the arrays a graph writes cost
// memory.
func (p *Pool) AllocatedBytes() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := make([]*region.Region, 0, len(p.all))
	for _, r := range p.all {
		rs = append(rs, r)
	}
	return allocatedBytes(rs)
}

// Cap is the number of buffers.
func (p *Pool) Cap() int { return cap(p.free) }

// Close removes every buffer.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for name, r := range p.all {
		errs = append(errs, r.Close())
		delete(p.all, name)
	}
	return errors.Join(errs...)
}
