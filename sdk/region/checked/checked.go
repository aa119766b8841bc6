// Package checked turns the region refs of a plugin call into typed slices,
// after checking that each ref is present, large enough for the shape the
// call implies, and aligned for its element type. Every failure wraps
// plugin.ErrInvalidRequest, so that a malformed request is answered with an
// error instead of a panic or a silent out-of-bounds write.
//
// A plugin of any kind may use it; cache.PlanRequest.View is built on it.
// It imports only sdk/plugin and sdk/region.
package checked

import (
	"fmt"
	"math"

	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// view checks ref for n elements of size bytes and returns its bytes. A
// zero-length shape accepts any ref, the zero ref included: a batch with no
// lookups in a table needs no memory for them.
func view(m *region.Mapper, ref region.Ref, n int64, size int64, what string) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: %s: negative length %d", plugin.ErrInvalidRequest, what, n)
	}
	if n == 0 {
		return nil, nil
	}
	if n > math.MaxInt64/size {
		return nil, fmt.Errorf("%w: %s: %d elements overflow", plugin.ErrInvalidRequest, what, n)
	}
	need := n * size
	if ref.IsZero() {
		return nil, fmt.Errorf("%w: %s: missing ref, need %d bytes", plugin.ErrInvalidRequest, what, need)
	}
	if ref.Length < need {
		return nil, fmt.Errorf("%w: %s: ref %s has %d bytes, need %d", plugin.ErrInvalidRequest, what, ref, ref.Length, need)
	}
	// Regions are page aligned, so the offset alone decides alignment; an
	// unaligned typed view would be undefined behaviour for unsafe.Slice.
	if ref.Offset%size != 0 {
		return nil, fmt.Errorf("%w: %s: offset %d not aligned to %d bytes", plugin.ErrInvalidRequest, what, ref.Offset, size)
	}
	b, err := m.Bytes(ref.Sub(0, need))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", plugin.ErrInvalidRequest, what, err)
	}
	return b, nil
}

// Int64s returns the first n int64s of ref; what names the array in errors.
func Int64s(m *region.Mapper, ref region.Ref, n int64, what string) ([]int64, error) {
	b, err := view(m, ref, n, 8, what)
	if err != nil {
		return nil, err
	}
	return region.Int64s(b), nil
}

// Float32s returns the first n float32s of ref.
func Float32s(m *region.Mapper, ref region.Ref, n int64, what string) ([]float32, error) {
	b, err := view(m, ref, n, 4, what)
	if err != nil {
		return nil, err
	}
	return region.Float32s(b), nil
}

// Bytes returns the first n bytes of ref.
func Bytes(m *region.Mapper, ref region.Ref, n int64, what string) ([]byte, error) {
	return view(m, ref, n, 1, what)
}
