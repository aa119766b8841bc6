// Package data makes the batches a run trains on: synthetic traces with
// the papers' access locality, and batch files (.frb) written from them
// (flowrun gen) or converted from Criteo Kaggle TSV and MovieLens ratings
// (flowrun convert). Both are deterministic by batch sequence: any batch
// can be made or read on its own, in any order, by any process, and comes
// out the same.
//
// Synthetic labels come from a planted teacher: every (table, row) has a
// hidden weight, every dense feature a hidden coefficient, and a sample's
// label is drawn from the sigmoid of their sum, so a model that learns the
// rows' embeddings can predict the labels and AUC means something. Two
// dataset options make the teacher harder (labels.go): a logit offset
// (rarer positives) and per-sample logit noise no feature carries.
//
// data imports only framework/config; it never imports the stages, the
// graph or the runtime.
package data

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/flowrun/flowrun/framework/config"
)

// Source fills batches by sequence number. Synthetic and File are sources;
// the load stage holds one.
type Source interface {
	// Fill writes batch seq into a; eval says that seq is a held-out batch.
	Fill(seq uint64, eval bool, a Arrays) error
}

// Synthetic generates batches for a dataset configuration.
type Synthetic struct {
	d    config.Dataset
	seed uint64
	// rows, ranks, permMul and permAdd are per table. ranks draws
	// popularity ranks (nil: uniform over the rows); a rank r is row
	// (r·permMul + permAdd) mod rows, so hot rows are spread over each
	// table, at other places in each.
	rows    []uint64
	ranks   []*rankSampler
	permMul []uint64
	permAdd []uint64
}

// NewSynthetic returns a generator; d must be valid (config.Validate).
// The access PDF of each table size is tabulated here, once.
func NewSynthetic(seed uint64, d config.Dataset) (*Synthetic, error) {
	if d.Rows < 1 || d.Tables < 1 || d.BatchSize < 1 || d.Lookups < 1 || d.DenseFeatures < 0 || d.MaxRows() < 1 {
		return nil, fmt.Errorf("dataset: invalid shape (tables %d, rows %d, batch_size %d, lookups %d, dense_features %d)",
			d.Tables, d.Rows, d.BatchSize, d.Lookups, d.DenseFeatures)
	}
	s := &Synthetic{d: d, seed: seed}
	sampler, err := newSamplerFor(d)
	if err != nil {
		return nil, err
	}
	byRows := map[int64]*rankSampler{}
	for t := 0; t < d.Tables; t++ {
		n := d.RowsOf(t)
		if n < 1 {
			return nil, fmt.Errorf("dataset: table %d has %d rows", t, n)
		}
		r, ok := byRows[n]
		if !ok && sampler != nil {
			r = sampler(n)
			byRows[n] = r
		}
		rows := uint64(n)
		s.rows = append(s.rows, rows)
		s.ranks = append(s.ranks, r)
		s.permMul = append(s.permMul, coprimeMul(rows))
		s.permAdd = append(s.permAdd, splitmix(seed^uint64(t)<<40)%rows)
	}
	return s, nil
}

// newSamplerFor returns the tabulation of d's access PDF for a table of a
// given size, or nil for uniform draws.
func newSamplerFor(d config.Dataset) (func(rows int64) *rankSampler, error) {
	switch d.Locality {
	case "random", "uniform":
		return nil, nil
	case "zipf":
		if !(d.ZipfS > 0) || math.IsInf(d.ZipfS, 0) {
			return nil, fmt.Errorf("dataset: zipf_s must be a finite number > 0, got %g", d.ZipfS)
		}
		return func(rows int64) *rankSampler { return newZipfSampler(d.ZipfS, rows) }, nil
	case config.CriteoKaggle:
		if d.CriteoSkew == config.CriteoSkewPerTable {
			return func(rows int64) *rankSampler {
				return newZipfSampler(FitZipfTable(rows, HECAFig1Top, HECAFig1Share), rows)
			}, nil
		}
		return func(rows int64) *rankSampler { return newZipfSampler(CriteoKaggleZipfS, rows) }, nil
	}
	p, ok := Localities[d.Locality]
	if !ok {
		return nil, fmt.Errorf("dataset: unknown locality %q", d.Locality)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return func(rows int64) *rankSampler { return newLocalitySampler(p, rows) }, nil
}

// coprimeMul is the multiplier of the rank-to-row bijection of a table of
// rows rows: the golden-ratio constant mod rows, moved up to the next
// number ≥ 2 coprime to rows (1 for a table too small to have one).
func coprimeMul(rows uint64) uint64 {
	m := 0x9e3779b97f4a7c15 % rows
	for m < 2 || gcd(m, rows) != 1 {
		m++
		if m >= rows {
			return 1
		}
	}
	return m
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Arrays are where Fill writes a batch.
type Arrays struct {
	IDs     []int64   // [table][sample·lookup]
	Offsets []int64   // [table][sample+1]
	Dense   []float32 // [sample][dense]
	Labels  []float32 // [sample]
}

// OpenSource is a run's data source for dataset d: the batch file of a
// dataset of kind file (checked against d, as Open does), else the
// synthetic generator for seed. done releases it (nothing to release for
// the generator).
func OpenSource(seed uint64, d config.Dataset) (src Source, done func() error, err error) {
	if d.Kind == "file" {
		f, err := Open(d.Path, d)
		if err != nil {
			return nil, nil, err
		}
		return f, f.Close, nil
	}
	syn, err := NewSynthetic(seed, d)
	if err != nil {
		return nil, nil, err
	}
	return syn, func() error { return nil }, nil
}

// NewArrays allocates arrays that hold exactly one batch of d.
func NewArrays(d config.Dataset) Arrays {
	return Arrays{
		IDs:     make([]int64, d.Tables*d.BatchSize*d.Lookups),
		Offsets: make([]int64, d.Tables*(d.BatchSize+1)),
		Dense:   make([]float32, d.BatchSize*d.DenseFeatures),
		Labels:  make([]float32, d.BatchSize),
	}
}

// check reports whether a has room for a batch of d.
func (a Arrays) check(d config.Dataset, seq uint64) error {
	if len(a.IDs) < d.Tables*d.BatchSize*d.Lookups || len(a.Offsets) < d.Tables*(d.BatchSize+1) ||
		len(a.Dense) < d.BatchSize*d.DenseFeatures || len(a.Labels) < d.BatchSize {
		return fmt.Errorf("batch %d: arrays too small for the dataset shape", seq)
	}
	return nil
}

// Fill writes batch seq into a. Held-out batches (eval) come from another
// stream of the same distribution. Every table draws from its own stream
// keyed by (seed, seq, eval, table), and the labels from one more.
func (s *Synthetic) Fill(seq uint64, eval bool, a Arrays) error {
	d := s.d
	if err := a.check(d, seq); err != nil {
		return err
	}
	stream := splitmix(seq)
	if eval {
		stream = splitmix(seq | 1<<63)
	}
	perTable := d.BatchSize * d.Lookups
	score := make([]float64, d.BatchSize)
	norm := 1 / math.Sqrt(float64(d.Tables*d.Lookups))
	var g rand.PCG
	for t := 0; t < d.Tables; t++ {
		g.Seed(s.seed, splitmix(stream+uint64(t)+1))
		ids := a.IDs[t*perTable : (t+1)*perTable]
		off := a.Offsets[t*(d.BatchSize+1) : (t+1)*(d.BatchSize+1)]
		rows, ranks := s.rows[t], s.ranks[t]
		for i := range ids {
			var rank uint64
			if ranks != nil {
				rank = ranks.rank(g.Uint64())
			} else {
				rank = uniformRank(g.Uint64(), rows)
			}
			ids[i] = int64(s.permute(t, rank))
		}
		for i := 0; i < d.BatchSize; i++ {
			off[i] = int64(i * d.Lookups)
			var sum float64
			for _, row := range ids[i*d.Lookups : (i+1)*d.Lookups] {
				sum += s.teacherRow(t, row)
			}
			score[i] += sum * norm
		}
		off[d.BatchSize] = int64(perTable)
	}
	g.Seed(s.seed, splitmix(stream))
	rng := rand.New(&g)
	lab := newLabeler(s.seed, stream, d.LabelOffset, d.LabelNoise)
	for i := 0; i < d.BatchSize; i++ {
		for f := 0; f < d.DenseFeatures; f++ {
			x := rng.NormFloat64()
			a.Dense[i*d.DenseFeatures+f] = float32(x)
			score[i] += x * s.teacherDense(f) / math.Sqrt(float64(d.DenseFeatures))
		}
		a.Labels[i] = lab.label(score[i], rng.Float64())
	}
	return nil
}

// permute maps a popularity rank of table t to a row: (rank·permMul +
// add) mod rows, a bijection because permMul is coprime to rows.
func (s *Synthetic) permute(t int, rank uint64) uint64 {
	rows, mul, add := s.rows[t], s.permMul[t], s.permAdd[t]
	if rows <= 1<<32 {
		return (rank*mul + add) % rows
	}
	hi, lo := bits.Mul64(rank, mul)
	lo, c := bits.Add64(lo, add, 0)
	return bits.Rem64(hi+c, lo, rows)
}

// teacherRow is the planted weight of a row: roughly standard normal,
// keyed by (seed, table, row).
func (s *Synthetic) teacherRow(table int, row int64) float64 {
	return gauss(splitmix(s.seed ^ 0x5eed ^ uint64(table)<<48 ^ uint64(row)))
}

func (s *Synthetic) teacherDense(f int) float64 {
	return gauss(splitmix(s.seed ^ 0xde75e ^ uint64(f)<<52))
}

// gauss turns 64 random bits into an approximately normal value (sum of
// four uniforms, scaled to unit variance): cheap and deterministic.
func gauss(x uint64) float64 {
	var sum float64
	for i := 0; i < 4; i++ {
		sum += float64(x&0xffff) / 65536
		x >>= 16
	}
	return (sum - 2) * math.Sqrt(3)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
