package data

import (
	"fmt"
	"math"
	"math/bits"
)

// The access PDFs of the synthetic traces. Each is a popularity law over a
// table's rows sorted by popularity (rank 0 the hottest), the shape that
// ScratchPipe's Fig. 3 and Tensor Casting's Fig. 5(a) plot for real
// datasets. README.md gives each law's parameters and the sentences of
// the papers they reproduce; TestLocalityShares measures them.

// LocalityPDF is a Zipf–Mandelbrot law over the fraction of rows: the row
// at popularity rank r of a table of N rows sits at u = r/N, and the
// density of accesses at u is proportional to (u + Q)^-S. Being a law of
// the fraction of rows, the share of accesses that goes to the top x% of
// rows is the same for a table of a thousand rows as for one of ten
// million, which is how the papers quote locality ("2% of the embeddings
// account for more than 80% of all accesses").
type LocalityPDF struct {
	// S is the power-law exponent of the tail.
	S float64
	// Q flattens the head: the hottest Q·N rows are accessed at a similar
	// rate instead of the single hottest row taking a fixed share.
	Q float64
}

// Localities are the named PDFs of dataset.locality (random and uniform
// draw rows uniformly and have none). The parameters are fitted to two
// points of each class's cumulative share curve; README.md lists them.
var Localities = map[string]LocalityPDF{
	// Alibaba's User table (ScratchPipe Sec. III-A, Fig. 6(a)): the top 2%
	// of rows get 8.5% of accesses, and a cache must hold 65% of the rows
	// to hit 90% of them.
	"low": {S: 2.244247, Q: 0.333863},
	// Between low and high (MovieLens, Kaggle Anime in Fig. 3), which the
	// papers give no figure for: halfway between them on the log-odds
	// scale at both of high's anchors, top 2% → 45.2%, top 10% → 75.7%.
	"medium": {S: 1.441416, Q: 0.00944289},
	// Criteo (ScratchPipe Sec. III-A): the top 2% of rows get more than
	// 80% of accesses (88%: a top-2% static cache misses 12%), and a larger
	// cache gains little: the top 10% get 95%.
	"high": {S: 1.364511, Q: 0.000115087},
}

// Share is the fraction of accesses that go to the hottest fraction u of
// rows (0 ≤ u ≤ 1): the cumulative distribution of the law.
func (p LocalityPDF) Share(u float64) float64 {
	switch {
	case u <= 0:
		return 0
	case u >= 1:
		return 1
	}
	return p.integral(u) / p.integral(1)
}

// integral is ∫_0^u (x+Q)^-S dx.
func (p LocalityPDF) integral(u float64) float64 {
	a := 1 - p.S
	if math.Abs(a) < 1e-12 {
		return math.Log((u + p.Q) / p.Q)
	}
	return (math.Pow(u+p.Q, a) - math.Pow(p.Q, a)) / a
}

// quantile is the inverse of Share: the u below which a fraction y of the
// accesses fall.
func (p LocalityPDF) quantile(y float64) float64 {
	a := 1 - p.S
	var u float64
	if math.Abs(a) < 1e-12 {
		u = p.Q*math.Exp(y*math.Log((1+p.Q)/p.Q)) - p.Q
	} else {
		u = math.Pow(math.Pow(p.Q, a)+y*a*p.integral(1), 1/a) - p.Q
	}
	return min(max(u, 0), 1)
}

func (p LocalityPDF) check() error {
	if !(p.S >= 0) || math.IsInf(p.S, 0) || !(p.Q > 0) || math.IsInf(p.Q, 0) {
		return fmt.Errorf("locality PDF needs S ≥ 0 and Q > 0, got S=%g Q=%g", p.S, p.Q)
	}
	return nil
}

// quantileBits sets the resolution of the inverse-CDF tables: 2^14
// quantiles. Between two quantiles a draw is spread uniformly, so no
// range of rows gets more than 1/16384 of the accesses wrong.
const quantileBits = 14

// rankSampler draws popularity ranks from a table of the inverse CDF of
// the continuous rank v ∈ [0, rows): a draw picks one of 2^quantileBits
// equally likely intervals with its top bits and a point inside it,
// linearly, with the rest. Building the table costs one inversion per
// quantile; a draw costs a multiply and an add, so a batch of 8 tables ×
// 2048 samples × 20 lookups takes a few milliseconds.
type rankSampler struct {
	rows uint64
	// v holds 2^quantileBits+1 quantiles of the rank, v[0] = 0 and
	// v[len-1] = rows.
	v []float64
}

// newLocalitySampler tabulates a LocalityPDF for a table of rows rows.
func newLocalitySampler(p LocalityPDF, rows int64) *rankSampler {
	const k = 1 << quantileBits
	s := &rankSampler{rows: uint64(rows), v: make([]float64, k+1)}
	for i := 0; i <= k; i++ {
		s.v[i] = p.quantile(float64(i)/k) * float64(rows)
	}
	s.v[k] = float64(rows)
	return s
}

// zipfExactRanks is how many of the hottest ranks newZipfSampler sums
// exactly; beyond them the sum is the integral of the midpoint rule, off
// by less than 1e-8 of a rank's mass there.
const zipfExactRanks = 4096

// newZipfSampler tabulates the classic Zipf law over absolute ranks: rank r
// (0-based) of rows is drawn with probability ∝ (r+1)^-s, for any s > 0.
// Unlike LocalityPDF its shape depends on the table size.
func newZipfSampler(s float64, rows int64) *rankSampler {
	const k = 1 << quantileBits
	n := uint64(rows)
	exact := min(n, zipfExactRanks)
	// prefix[j] = Σ_{i=1..j} i^-s over the exact ranks.
	prefix := make([]float64, exact+1)
	for j := uint64(1); j <= exact; j++ {
		prefix[j] = prefix[j-1] + math.Pow(float64(j), -s)
	}
	// tail(w) = ∫_{exact+½}^{w} x^-s dx: the mass of 1-based ranks
	// exact+1 .. w-½ by the midpoint rule.
	lo := float64(exact) + 0.5
	tail := func(w float64) float64 {
		if math.Abs(1-s) < 1e-12 {
			return math.Log(w / lo)
		}
		return (math.Pow(w, 1-s) - math.Pow(lo, 1-s)) / (1 - s)
	}
	tailInv := func(m float64) float64 {
		if math.Abs(1-s) < 1e-12 {
			return lo * math.Exp(m)
		}
		return math.Pow(math.Pow(lo, 1-s)+(1-s)*m, 1/(1-s))
	}
	total := prefix[exact]
	if n > exact {
		total += tail(float64(n) + 0.5)
	}
	sm := &rankSampler{rows: n, v: make([]float64, k+1)}
	j := uint64(0) // prefix[j] ≤ target < prefix[j+1] while in the exact part
	for i := 1; i < k; i++ {
		target := float64(i) / k * total
		if target < prefix[exact] {
			for prefix[j+1] <= target {
				j++
			}
			mass := prefix[j+1] - prefix[j]
			sm.v[i] = float64(j) + (target-prefix[j])/mass
		} else {
			// 1-based continuous position w ↔ 0-based rank w-½.
			sm.v[i] = tailInv(target-prefix[exact]) - 0.5
		}
		sm.v[i] = min(max(sm.v[i], sm.v[i-1]), float64(n))
	}
	sm.v[k] = float64(n)
	return sm
}

// rank turns 64 random bits into a rank in [0, rows).
func (s *rankSampler) rank(x uint64) uint64 {
	i := x >> (64 - quantileBits)
	frac := float64(x<<quantileBits>>11) * (1.0 / (1 << 53))
	lo := s.v[i]
	r := uint64(lo + frac*(s.v[i+1]-lo))
	if r >= s.rows {
		r = s.rows - 1
	}
	return r
}

// uniformRank turns 64 random bits into a uniform rank in [0, rows): the
// high word of x·rows, biased by at most rows/2^64.
func uniformRank(x, rows uint64) uint64 {
	hi, _ := bits.Mul64(x, rows)
	return hi
}
