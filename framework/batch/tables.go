package batch

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"math"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/region"
)

// Tables are the host embedding tables: one region per table, rows of Dim
// float32, initialised from a counter-based generator keyed by (seed, table,
// row) so a row's initial value never depends on when or where it is made.
type Tables struct {
	Rows    int64
	Dim     int
	regions []*region.Region
}

// NewTables creates and initialises n host tables.
func NewTables(seed uint64, n int, rows int64, dim int) (*Tables, error) {
	t := &Tables{Rows: rows, Dim: dim}
	for i := 0; i < n; i++ {
		r, err := region.Create(fmt.Sprintf("table%d", i), rows*int64(dim)*4)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("host table %d: %w", i, err)
		}
		t.regions = append(t.regions, r)
		data := region.Float32s(r.Bytes())
		scale := float32(1 / math.Sqrt(float64(dim)))
		for row := int64(0); row < rows; row++ {
			InitRow(data[row*int64(dim):(row+1)*int64(dim)], seed, i, row, scale)
		}
	}
	return t, nil
}

// InitRow fills one row with values uniform in [-scale, scale) drawn from
// splitmix64 over (seed, table, row, column).
func InitRow(row []float32, seed uint64, table int, id int64, scale float32) {
	key := seed ^ uint64(table+1)*0x9e3779b97f4a7c15 ^ uint64(id)*0xbf58476d1ce4e5b9
	for c := range row {
		u := float32(SplitMix64(key+uint64(c))>>40) / float32(1<<24)
		row[c] = (2*u - 1) * scale
	}
}

// SplitMix64 is a counter-based generator: a good 64-bit hash of x.
func SplitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Kernel returns the tables as the kernel SDK describes them.
func (t *Tables) Kernel() []kernel.Table {
	ks := make([]kernel.Table, len(t.regions))
	for i, r := range t.regions {
		ks[i] = kernel.Table{Data: r.Ref(), Rows: t.Rows, Dim: t.Dim}
	}
	return ks
}

// Len is the number of tables.
func (t *Tables) Len() int { return len(t.regions) }

// Row returns one row of one table (shared memory: writes are visible to
// every plugin).
func (t *Tables) Row(table int, row int64) []float32 {
	data := region.Float32s(t.regions[table].Bytes())
	return data[row*int64(t.Dim) : (row+1)*int64(t.Dim)]
}

// Hash writes every row of every table, table after table, as
// little-endian float32 into h: the embedding half of the model digest.
// Regions hold native float32; flowrun supports little-endian hosts only
// (amd64, arm64), so the bytes are already canonical.
func (t *Tables) Hash(h hash.Hash) {
	for _, r := range t.regions {
		h.Write(r.Bytes())
	}
}

// Digest is sha256 over the tables followed by the dense model's digest.
func (t *Tables) Digest(dense []byte) string {
	h := sha256.New()
	t.Hash(h)
	h.Write(dense)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// Close removes the tables.
func (t *Tables) Close() error {
	var errs []error
	for _, r := range t.regions {
		errs = append(errs, r.Close())
	}
	t.regions = nil
	return errors.Join(errs...)
}
