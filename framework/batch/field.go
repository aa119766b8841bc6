package batch

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/region"
)

// Shape is what sizes a batch's arrays: the run's dataset shape and the
// float32s of a host row.
type Shape struct {
	Tables, BatchSize, Lookups, Dim, DenseFeatures int
	// Stride is the float32s of a host row, values then optimizer state:
	// the staged rows of the cache traffic (MissRows, VictimRows) are whole
	// rows, so a row's state travels with it.
	Stride int
}

// ShapeOf is the shape of a dataset whose host rows are stride float32s
// (0 means d.Dim: no optimizer state).
func ShapeOf(d config.Dataset, stride int) Shape {
	if stride == 0 {
		stride = d.Dim
	}
	return Shape{Tables: d.Tables, BatchSize: d.BatchSize, Lookups: d.Lookups, Dim: d.Dim,
		DenseFeatures: d.DenseFeatures, Stride: stride}
}

// IDs is the lookups of a batch over all tables: the length of the IDs
// array and of every array laid out like it.
func (s Shape) IDs() int64 { return int64(s.Tables) * int64(s.BatchSize) * int64(s.Lookups) }

// Embeddings is the float32s of one vector of dim per table and sample
// (the pooled embeddings, their gradients).
func (s Shape) Embeddings() int64 { return int64(s.Tables) * int64(s.BatchSize) * int64(s.Dim) }

// FieldKind says where a field travels: an array in the batch's buffer or
// a stat in its header. Its string is how messages name it.
type FieldKind string

// The kinds of field.
const (
	ArrayField FieldKind = "array"
	StatField  FieldKind = "stat"
)

// Field is one thing a stage hands downstream with a batch: an Array (in
// the buffer) or a Stat (in the header). Stage factories declare the
// fields they produce and consume; the graph refuses a consumer without a
// producer upstream, and the batch layout holds only the arrays the graph
// declares. Fields are identified by kind and name: two declarations of
// the same kind and name, in any package, are the same field.
//
// Any package may declare a field (NewArray, NewStat): a stage kind with a
// new array declares it in its own package, or, when another stage kind
// reads it, in a package both import (stage kinds never import each
// other). This package declares the fields the shipped stage kinds share.
type Field interface {
	Name() string
	Kind() FieldKind
	// Bytes is the room the field takes in a batch buffer of shape s: 0
	// for a stat.
	Bytes(s Shape) int64
}

// Key identifies a field across declarations: "array ids", "stat misses".
func Key(f Field) string { return string(f.Kind()) + " " + f.Name() }

// Elem is the element type of an array.
type Elem interface{ int64 | float32 | uint8 }

// Array is a typed array of a batch, sized by the run's shape. It is a
// handle on its declaration, so that Arrays compare (==) like Stats.
type Array[T Elem] struct{ d *arrayDecl }

type arrayDecl struct {
	name   string
	length func(Shape) int64
}

// NewArray declares an array of length(s) elements of T in a buffer of
// shape s.
func NewArray[T Elem](name string, length func(Shape) int64) Array[T] {
	return Array[T]{&arrayDecl{name: name, length: length}}
}

// Name is the array's name, the key of its ref in a batch header.
func (a Array[T]) Name() string { return a.d.name }

// Kind is ArrayField.
func (a Array[T]) Kind() FieldKind { return ArrayField }

// Len is the array's elements in a buffer of shape s.
func (a Array[T]) Len(s Shape) int64 { return a.d.length(s) }

// Bytes is the array's bytes in a buffer of shape s.
func (a Array[T]) Bytes(s Shape) int64 { return a.d.length(s) * elemSize[T]() }

// Ref is the array's ref in b, or an error naming what b lacks.
func (a Array[T]) Ref(b *Batch) (region.Ref, error) { return b.Ref(a) }

// View is b's array, typed.
func (a Array[T]) View(b *Batch) ([]T, error) {
	p, err := b.Bytes(a)
	if err != nil {
		return nil, err
	}
	var v any
	switch any(*new(T)).(type) {
	case int64:
		v = region.Int64s(p)
	case float32:
		v = region.Float32s(p)
	default:
		v = p
	}
	return v.([]T), nil
}

func elemSize[T Elem]() int64 {
	switch any(*new(T)).(type) {
	case int64:
		return 8
	case float32:
		return 4
	}
	return 1
}

// Stat is a count a stage records on a batch. It travels downstream in the
// header, for the stages that read it, and becomes the span attribute
// "flowrun.<name>" of every stage the batch passes from then on.
type Stat struct{ name string }

// NewStat declares a stat.
func NewStat(name string) Stat { return Stat{name: name} }

// Name is the stat's key in the header and, after "flowrun.", on spans.
func (s Stat) Name() string { return s.name }

// Kind is StatField.
func (s Stat) Kind() FieldKind { return StatField }

// Bytes is 0: a stat travels in the header.
func (s Stat) Bytes(Shape) int64 { return 0 }

// Set records v on b.
func (s Stat) Set(b *Batch, v int64) { b.SetStat(s.name, v) }

// Add adds v to b's count (0 when unset).
func (s Stat) Add(b *Batch, v int64) { b.SetStat(s.name, b.Stats[s.name]+v) }

// Get is b's count and whether a stage upstream recorded it.
func (s Stat) Get(b *Batch) (int64, bool) {
	v, ok := b.Stats[s.name]
	return v, ok
}

// Need is b's count, or an error naming the stat and the stage reading it
// (by) when no stage upstream recorded it: the graph checks that a
// producer is upstream, so this guards a stage driven outside a graph.
func (s Stat) Need(b *Batch, by string) (int64, error) {
	v, ok := b.Stats[s.name]
	if !ok {
		return 0, fmt.Errorf("batch %d carries no %s stat: %s needs a stage upstream that produces it", b.Seq, s.name, by)
	}
	return v, nil
}
