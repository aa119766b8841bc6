package model

import (
	"encoding/binary"
	"fmt"
	"math"
)

// StateWriter and StateReader encode a model's state as the built-in
// models do: a tag naming the model and its format, then float32 arrays,
// each with its length, little-endian. A model author may use them or
// any encoding of their own.

// StateWriter builds a state.
type StateWriter struct{ buf []byte }

// NewStateWriter starts a state with tag (e.g. "dlrm/1").
func NewStateWriter(tag string) *StateWriter {
	w := &StateWriter{}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(tag)))
	w.buf = append(w.buf, tag...)
	return w
}

// Floats appends one array.
func (w *StateWriter) Floats(xs []float32) {
	w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(len(xs)))
	for _, x := range xs {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, math.Float32bits(x))
	}
}

// Bytes is the state.
func (w *StateWriter) Bytes() []byte { return w.buf }

// StateReader reads a state a StateWriter wrote.
type StateReader struct {
	buf []byte
	err error
}

// NewStateReader checks that state starts with tag.
func NewStateReader(state []byte, tag string) (*StateReader, error) {
	if len(state) < 4 || uint64(len(state)-4) < uint64(binary.LittleEndian.Uint32(state)) {
		return nil, fmt.Errorf("%w: too short for a tag", ErrBadState)
	}
	n := binary.LittleEndian.Uint32(state)
	if got := string(state[4 : 4+n]); got != tag {
		return nil, fmt.Errorf("%w: it is a %q state, this model's are %q", ErrBadState, got, tag)
	}
	return &StateReader{buf: state[4+n:]}, nil
}

// Floats reads the next array into dst, which must have its length.
func (r *StateReader) Floats(dst []float32, what string) {
	if r.err != nil {
		return
	}
	if len(r.buf) < 8 {
		r.err = fmt.Errorf("%w: it ends before %s", ErrBadState, what)
		return
	}
	n := binary.LittleEndian.Uint64(r.buf)
	if n != uint64(len(dst)) || uint64(len(r.buf)-8) < 4*n {
		r.err = fmt.Errorf("%w: %s has %d values, this model's has %d", ErrBadState, what, n, len(dst))
		return
	}
	r.buf = r.buf[8:]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(r.buf[4*i:]))
	}
	r.buf = r.buf[4*n:]
}

// Close is the first error, or one when bytes are left over.
func (r *StateReader) Close() error {
	if r.err == nil && len(r.buf) != 0 {
		return fmt.Errorf("%w: %d bytes after the last array", ErrBadState, len(r.buf))
	}
	return r.err
}

// EncodeState is the state of arrays, in order, under tag: what a model
// whose state is a list of float32 arrays (its parameters, then its
// optimizer's) returns from State.
func EncodeState(tag string, arrays ...[]float32) []byte {
	w := NewStateWriter(tag)
	for _, a := range arrays {
		w.Floats(a)
	}
	return w.Bytes()
}

// DecodeState reads a state EncodeState wrote into arrays, each of which
// must have the saved length. It reads into copies first, so that a state
// that is not this model's leaves every array as it was.
func DecodeState(state []byte, tag string, arrays ...[]float32) error {
	r, err := NewStateReader(state, tag)
	if err != nil {
		return err
	}
	fresh := make([][]float32, len(arrays))
	for i, a := range arrays {
		fresh[i] = make([]float32, len(a))
		r.Floats(fresh[i], fmt.Sprintf("array %d of %d", i+1, len(arrays)))
	}
	if err := r.Close(); err != nil {
		return err
	}
	for i, a := range arrays {
		copy(a, fresh[i])
	}
	return nil
}
