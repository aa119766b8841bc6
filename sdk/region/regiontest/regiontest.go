// Package regiontest gives a plugin's tests a shared-memory arena: one real
// region (under /dev/shm) carved into 8-byte aligned refs, so that tests
// exercise the same mapping path as a host does. Any plugin kind's tests
// may use it; it imports only sdk/region.
package regiontest

import (
	"testing"

	"github.com/flowrun/flowrun/sdk/region"
)

// Arena hands out refs from one region.
type Arena struct {
	t    testing.TB
	r    *region.Region
	next int64
}

// New creates an arena of size bytes, removed when the test ends.
func New(t testing.TB, size int64) *Arena {
	t.Helper()
	r, err := region.Create("plugintest", size)
	if err != nil {
		t.Fatalf("create region: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return &Arena{t: t, r: r}
}

// Alloc returns a zeroed ref of n bytes.
func (a *Arena) Alloc(n int64) region.Ref {
	a.t.Helper()
	if a.next+n > a.r.Size() {
		a.t.Fatalf("arena full: %d + %d > %d", a.next, n, a.r.Size())
	}
	ref := region.Ref{Region: a.r.Name(), Offset: a.next, Length: n}
	clear(a.Bytes(ref))
	a.next += (n + 7) &^ 7
	return ref
}

// Bytes returns ref's bytes.
func (a *Arena) Bytes(ref region.Ref) []byte {
	return a.r.Bytes()[ref.Offset : ref.Offset+ref.Length]
}

// Int64s stores v and returns its ref.
func (a *Arena) Int64s(v []int64) region.Ref {
	ref := a.Alloc(int64(len(v)) * 8)
	copy(region.Int64s(a.Bytes(ref)), v)
	return ref
}

// Float32s stores v and returns its ref.
func (a *Arena) Float32s(v []float32) region.Ref {
	ref := a.Alloc(int64(len(v)) * 4)
	copy(region.Float32s(a.Bytes(ref)), v)
	return ref
}

// ReadInt64s copies ref's int64s.
func (a *Arena) ReadInt64s(ref region.Ref) []int64 {
	return append([]int64(nil), region.Int64s(a.Bytes(ref))...)
}

// ReadFloat32s copies ref's float32s.
func (a *Arena) ReadFloat32s(ref region.Ref) []float32 {
	return append([]float32(nil), region.Float32s(a.Bytes(ref))...)
}
