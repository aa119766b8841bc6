package data

import "math"

// The criteo-kaggle locality (README.md "Criteo-shaped data"): Criteo
// Kaggle's 26 fields at their own cardinalities (config.CriteoKaggleRows),
// each drawn from a classic Zipf law over its rows with one exponent
// shared by every table. The exponent is fitted to one published
// statistic alone, HECA's Fig. 1 ("4.43% of features accounting for 90%
// of the total data frequency", Criteo Kaggle), and then held fixed, so
// every other statistic of the data (DSF retention, hit rates) is a
// prediction.

// CriteoKaggleZipfS is the exponent FitZipfPooled finds for Kaggle's
// cardinalities, HECAFig1Top and HECAFig1Share; TestCriteoKaggleFit
// refits it and fails if it drifts.
const CriteoKaggleZipfS = 0.797131281

// HECA Fig. 1's statistic: the hottest 4.43% of all features carry 90% of
// the accesses.
const (
	HECAFig1Top   = 0.0443
	HECAFig1Share = 0.90
)

// FitZipfPooled is the Zipf exponent s, shared by every table, for which
// the hottest fraction top of all features of tables of these sizes,
// pooled, carry share of the accesses (PooledShare). Every table gets the
// same number of accesses (one lookup per sample each). The share grows
// with s, so a bisection finds it to 1e-9.
func FitZipfPooled(rows []int64, top, share float64) float64 {
	lo, hi := 0.01, 8.0
	for hi-lo > 1e-9 {
		mid := (lo + hi) / 2
		if PooledShare(mid, rows, top) < share {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// PooledShare is the share of all accesses that go to the hottest
// fraction top of all features, pooled over tables whose ranks are drawn
// from Zipf(s) over each table's rows, each table getting 1/len(rows) of
// the accesses. It is a statement about the law (every row a feature),
// not about a finite sample of it.
func PooledShare(s float64, rows []int64, top float64) float64 {
	var all int64
	exps := make([]float64, len(rows))
	for t, n := range rows {
		all += n
		exps[t] = s
	}
	return PooledShareOf(exps, rows, all, top)
}

// zipfSum is Σ_{k=1..K} k^-s for any K: exact over the hottest
// zipfExactRanks ranks and the midpoint integral beyond, as newZipfSampler
// tabulates the law.
type zipfSum struct {
	s     float64
	exact []float64 // exact[k] = Σ_{i=1..k} i^-s
	total float64
}

func newZipfSum(s float64, rows int64) *zipfSum {
	n := min(rows, zipfExactRanks)
	z := &zipfSum{s: s, exact: make([]float64, n+1)}
	for k := int64(1); k <= n; k++ {
		z.exact[k] = z.exact[k-1] + math.Pow(float64(k), -s)
	}
	z.total = z.prefix(rows)
	return z
}

func (z *zipfSum) prefix(k int64) float64 {
	n := int64(len(z.exact) - 1)
	if k <= n {
		return z.exact[k]
	}
	lo, hi := float64(n)+0.5, float64(k)+0.5
	if math.Abs(1-z.s) < 1e-12 {
		return z.exact[n] + math.Log(hi/lo)
	}
	return z.exact[n] + (math.Pow(hi, 1-z.s)-math.Pow(lo, 1-z.s))/(1-z.s)
}

// ExpectedUnique is the expected number of distinct rows among draws
// independent lookups of a table of rows rows under Zipf(s):
// Σ_r 1 − (1 − p_r)^draws. The hottest ranks are summed one by one and
// the rest in geometric buckets (the probability falls smoothly there),
// so a table of ten million rows costs a few thousand terms.
func ExpectedUnique(s float64, rows int64, draws int) float64 {
	z := newZipfSum(s, rows)
	d := float64(draws)
	term := func(p float64) float64 { return -math.Expm1(d * math.Log1p(-p)) }
	var u float64
	k := int64(1)
	for ; k <= min(rows, zipfExactRanks); k++ {
		u += term(math.Pow(float64(k), -s) / z.total)
	}
	for k <= rows {
		end := min(rows, k+max(1, k/256))
		// ranks k..end at the probability of their midpoint
		mid := (float64(k) + float64(end)) / 2
		u += float64(end-k+1) * term(math.Pow(mid, -s)/z.total)
		k = end + 1
	}
	return u
}

// DSFRetention is the expected share of a batch's lookups DSF keeps
// (unique rows / lookups, summed over tables) for batch samples of one
// lookup per table under Zipf(s) over tables of these sizes.
func DSFRetention(s float64, rows []int64, batch int) float64 {
	var u float64
	for _, n := range rows {
		u += ExpectedUnique(s, n, batch)
	}
	return u / float64(len(rows)*batch)
}
