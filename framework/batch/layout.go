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
	Shape
	// IDsPerTable is the room each table has in IDs (BatchSize·Lookups).
	IDsPerTable int
	offsets     map[string]int64
	sizes       map[string]int64
	fields      []Field
	Size        int64
}

// NewLayout sizes a batch buffer holding every array this package declares
// (AllArrays) for a dataset whose host rows are stride float32s (0 means
// d.Dim: no optimizer state). A run builds its layout from its graph's
// fields instead (NewLayoutFor), so that a buffer holds only the arrays
// its stages use.
func NewLayout(d config.Dataset, stride int) *Layout {
	l, err := NewLayoutFor(ShapeOf(d, stride), AllArrays())
	if err != nil {
		panic(err) // AllArrays declares each name once
	}
	return l
}

// NewLayoutFor sizes a batch buffer of shape s for the arrays among fields
// (stats take no room), in the order given. A field listed twice is laid
// out once; two arrays of one name and different sizes are an error.
func NewLayoutFor(s Shape, fields []Field) (*Layout, error) {
	if s.Stride == 0 {
		s.Stride = s.Dim
	}
	l := &Layout{Shape: s, IDsPerTable: s.BatchSize * s.Lookups,
		offsets: make(map[string]int64), sizes: make(map[string]int64)}
	for _, f := range fields {
		if f.Kind() != ArrayField {
			continue
		}
		bytes := f.Bytes(s)
		if had, ok := l.sizes[f.Name()]; ok {
			if had != bytes {
				return nil, fmt.Errorf("batch layout: array %q declared twice, with %d and %d bytes", f.Name(), had, bytes)
			}
			continue
		}
		l.offsets[f.Name()] = l.Size
		l.sizes[f.Name()] = bytes
		l.fields = append(l.fields, f)
		l.Size += (bytes + 63) &^ 63
	}
	return l, nil
}

// Fields lists the arrays the layout holds, in buffer order.
func (l *Layout) Fields() []Field { return append([]Field(nil), l.fields...) }

// Has reports whether the layout holds array a.
func (l *Layout) Has(a Field) bool {
	_, ok := l.offsets[a.Name()]
	return ok && a.Kind() == ArrayField
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
		// A graph whose stages pass only stats still cycles buffers: they
		// bound its batches in flight. One cache line stands in for none.
		r, err := region.Create(fmt.Sprintf("batch%d", i), max(layout.Size, 64))
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
