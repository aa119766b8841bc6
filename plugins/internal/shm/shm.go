// Package shm turns the region refs of a batch call into typed slices, after
// checking that each ref is present, large enough for the shape the call
// implies, and aligned for its element type. Every failure wraps
// plugin.ErrInvalidRequest, so that a malformed request is answered with an
// error instead of a panic or a silent out-of-bounds write. The checks
// themselves are the SDK's (sdk/region/checked), the same a third-party
// plugin gets.
//
// It is shared by the built-in plugins only; it imports nothing from
// framework/ (plugins see flowrun through sdk/ alone).
package shm

import (
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/checked"
)

// Int64s returns the first n int64s of ref.
func Int64s(m *region.Mapper, ref region.Ref, n int64, what string) ([]int64, error) {
	return checked.Int64s(m, ref, n, what)
}

// Float32s returns the first n float32s of ref.
func Float32s(m *region.Mapper, ref region.Ref, n int64, what string) ([]float32, error) {
	return checked.Float32s(m, ref, n, what)
}

// Bytes returns the first n bytes of ref.
func Bytes(m *region.Mapper, ref region.Ref, n int64, what string) ([]byte, error) {
	return checked.Bytes(m, ref, n, what)
}

// OptionalFloat32s is like Float32s for an output the caller may leave out: the
// zero ref yields nil and no error.
func OptionalFloat32s(m *region.Mapper, ref region.Ref, n int64, what string) ([]float32, error) {
	if ref.IsZero() {
		return nil, nil
	}
	return Float32s(m, ref, n, what)
}

// Overlap reports whether two refs share any byte. Kernels use it to decide
// whether per-table work may run in parallel without changing the result.
func Overlap(a, b region.Ref) bool {
	if a.IsZero() || b.IsZero() || a.Region != b.Region || a.Length == 0 || b.Length == 0 {
		return false
	}
	return a.Offset < b.Offset+b.Length && b.Offset < a.Offset+a.Length
}
