// Package data makes the batches a run trains on. Synthetic data is
// deterministic by (seed, batch sequence): any batch can be made on its own,
// in any order, by any process, and comes out the same.
//
// Labels come from a planted teacher: every (table, row) has a hidden
// weight, every dense feature a hidden coefficient, and a sample's label is
// drawn from the sigmoid of their sum, so a model that learns the rows'
// embeddings can predict the labels and AUC means something.
package data

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/flowrun/flowrun/framework/config"
)

// Synthetic generates batches for a dataset configuration.
type Synthetic struct {
	d    config.Dataset
	seed uint64
	// perm maps a popularity rank to a row, so hot rows are spread over the
	// table instead of sitting at its start.
	permMul, permAdd uint64
	zipfS            float64
}

// Locality exponents for the named access distributions. random and
// uniform draw rows uniformly; low, medium and high are Zipf laws of
// growing skew (the shapes of ScratchPipe's Fig. 3 are refined by the
// training-engine work; these keep the same ordering of skew).
var localityS = map[string]float64{"low": 1.01, "medium": 1.1, "high": 1.3}

// NewSynthetic returns a generator; d must be valid (config.Validate).
func NewSynthetic(seed uint64, d config.Dataset) (*Synthetic, error) {
	s := &Synthetic{d: d, seed: seed}
	switch d.Locality {
	case "random", "uniform":
	case "zipf":
		s.zipfS = d.ZipfS
	default:
		var ok bool
		if s.zipfS, ok = localityS[d.Locality]; !ok {
			return nil, fmt.Errorf("dataset: unknown locality %q", d.Locality)
		}
	}
	if s.zipfS != 0 && s.zipfS <= 1 {
		// math/rand's Zipf needs s > 1; values at or below 1 are clamped to
		// the nearest it accepts.
		s.zipfS = 1.0001
	}
	rows := uint64(d.Rows)
	s.permMul = 0x9e3779b97f4a7c15 % rows
	for s.permMul < 2 || gcd(s.permMul, rows) != 1 {
		s.permMul++
		if s.permMul >= rows {
			s.permMul = 1
			break
		}
	}
	s.permAdd = splitmix(seed) % rows
	return s, nil
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

// Fill writes batch seq into a. Held-out batches (eval) come from another
// stream of the same distribution.
func (s *Synthetic) Fill(seq uint64, eval bool, a Arrays) error {
	d := s.d
	perTable := d.BatchSize * d.Lookups
	if len(a.IDs) < d.Tables*perTable || len(a.Offsets) < d.Tables*(d.BatchSize+1) ||
		len(a.Dense) < d.BatchSize*d.DenseFeatures || len(a.Labels) < d.BatchSize {
		return fmt.Errorf("batch %d: arrays too small for the dataset shape", seq)
	}
	stream := seq
	if eval {
		stream |= 1 << 63
	}
	rng := rand.New(rand.NewPCG(s.seed, splitmix(stream)))
	var zipf *rand.Zipf
	if s.zipfS > 0 {
		zipf = rand.NewZipf(rng, s.zipfS, 1, uint64(d.Rows-1))
	}
	rows := uint64(d.Rows)
	score := make([]float64, d.BatchSize)
	norm := 1 / math.Sqrt(float64(d.Tables*d.Lookups))
	for t := 0; t < d.Tables; t++ {
		ids := a.IDs[t*perTable : (t+1)*perTable]
		off := a.Offsets[t*(d.BatchSize+1) : (t+1)*(d.BatchSize+1)]
		for i := 0; i < d.BatchSize; i++ {
			off[i] = int64(i * d.Lookups)
			for j := 0; j < d.Lookups; j++ {
				var rank uint64
				if zipf != nil {
					rank = zipf.Uint64()
				} else {
					rank = rng.Uint64N(rows)
				}
				row := int64((rank*s.permMul + s.permAdd) % rows)
				ids[i*d.Lookups+j] = row
				score[i] += s.teacherRow(t, row) * norm
			}
		}
		off[d.BatchSize] = int64(perTable)
	}
	for i := 0; i < d.BatchSize; i++ {
		for f := 0; f < d.DenseFeatures; f++ {
			x := rng.NormFloat64()
			a.Dense[i*d.DenseFeatures+f] = float32(x)
			score[i] += x * s.teacherDense(f) / math.Sqrt(float64(d.DenseFeatures))
		}
		p := 1 / (1 + math.Exp(-3*score[i]))
		if rng.Float64() < p {
			a.Labels[i] = 1
		} else {
			a.Labels[i] = 0
		}
	}
	return nil
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
