package data

import "math"

// Other readings of HECA's Fig. 1 statistic (docs/benchmarks-heca.md,
// "Other readings of Fig. 1"). The criteo-kaggle profile uses one of
// them (FitZipfPooled: the law's features, pooled over the 26 fields);
// these compute what the others would predict for DSF retention, so the
// choice is documented with numbers. None is fitted to retention, and
// none feeds the sampler.

// CriteoKaggleSamples is the number of samples of Criteo Kaggle's
// training file (train.txt, 7 days), over which Fig. 1 counts features.
const CriteoKaggleSamples = 45840617

// fig1MaxS caps a per-table exponent: a table too small for its hottest
// 4.43% to be a whole feature cannot reach 90% at any finite s.
const fig1MaxS = 8.0

// ZipfTopShare is the share of one table's accesses that go to its
// hottest x features (x real: a fraction of the next feature's
// probability beyond the whole ones) under Zipf(s) over rows rows.
func ZipfTopShare(s float64, rows int64, x float64) float64 {
	z := newZipfSum(s, rows)
	k := int64(math.Floor(x))
	if k >= rows {
		return 1
	}
	m := z.prefix(k) + (x-float64(k))*math.Pow(float64(k+1), -s)
	return m / z.total
}

// FitZipfPerTable is the reading of Fig. 1 per field: each table its own
// exponent, for which its own hottest fraction top of rows carries share
// of its accesses. A table whose top fraction is less than one feature
// worth share of the mass gets fig1MaxS (nearly every lookup its hottest
// row): the statistic is undefined for it.
func FitZipfPerTable(rows []int64, top, share float64) []float64 {
	s := make([]float64, len(rows))
	for t, n := range rows {
		s[t] = FitZipfTable(n, top, share)
	}
	return s
}

// FitZipfTable is one table's exponent of FitZipfPerTable: it depends on
// the table's size alone, so the per-table locality (config.CriteoSkew
// per-table) fits each table as its sampler is built.
func FitZipfTable(rows int64, top, share float64) float64 {
	x := top * float64(rows)
	if ZipfTopShare(fig1MaxS, rows, x) < share {
		return fig1MaxS
	}
	lo, hi := 0.01, fig1MaxS
	for hi-lo > 1e-7 {
		mid := (lo + hi) / 2
		if ZipfTopShare(mid, rows, x) < share {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// ObservedSupport is the reading of a field's cardinality as what a
// finite sample reveals: the support N of a Zipf(s) law whose samples
// draws have card distinct values in expectation (ExpectedUnique). It
// returns 0 when no support reaches card (s > 1 bounds the distinct
// values of any support); a table of at most maxExact rows is taken as
// it is (every value of a small field is seen in 45 million samples).
func ObservedSupport(s float64, card int64, samples int) int64 {
	const maxExact, maxSupport = 1 << 16, int64(1) << 44
	if card <= maxExact {
		return card
	}
	if ExpectedUnique(s, maxSupport, samples) < float64(card) {
		return 0
	}
	lo, hi := card, maxSupport // ExpectedUnique grows with the support
	for hi-lo > max(1, lo/100000) {
		mid := lo + (hi-lo)/2
		if ExpectedUnique(s, mid, samples) < float64(card) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// PooledShareOf is PooledShare over tables each with its own exponent
// s[t] and support[t], counting the hottest top of features features
// (a dataset's observed features, which may be fewer than the laws'
// supports). Each table gets 1/len(s) of the accesses.
func PooledShareOf(s []float64, support []int64, features int64, top float64) float64 {
	zs := make([]*zipfSum, len(s))
	for t := range s {
		zs[t] = newZipfSum(s[t], support[t])
	}
	want := int64(math.Round(top * float64(features)))
	T := float64(len(s))
	// A feature of table t at 1-based rank k has probability
	// k^-s_t / (T·Z_t); those at or above a threshold p are the ranks
	// k ≤ (p·T·Z_t)^(-1/s_t). Bisect p (in logs) for want features.
	count := func(logp float64) (n int64, mass float64) {
		for t, z := range zs {
			// clamp before converting: the power overflows for small p
			kf := math.Floor(math.Exp(-(logp + math.Log(T*z.total)) / s[t]))
			k := int64(min(max(kf, 0), float64(support[t])))
			n += k
			mass += z.prefix(k) / z.total
		}
		return n, mass / T
	}
	lo, hi := -200.0, 0.0 // log-probabilities: every feature ≥ e^-200 > 0, none ≥ 1 with ≥ 2 features
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		if n, _ := count(mid); n > want {
			lo = mid
		} else {
			hi = mid
		}
	}
	// hi counts at most want features; the ranks between it and want
	// (ties across tables) are taken at their probability.
	n, mass := count(hi)
	if n < want {
		if nLo, massLo := count(lo); nLo > n {
			mass += (massLo - mass) * float64(want-n) / float64(nLo-n)
		}
	}
	return mass
}

// FitZipfObserved is the reading of Fig. 1 over the features Criteo
// Kaggle's file shows: one exponent for all fields, each field's law on
// the support whose samples draws reveal its cardinality
// (ObservedSupport), and the hottest top of the observed features
// (Σ cards) carrying share of the accesses. It returns the exponent and
// the supports; the largest exponent any support allows bounds the fit
// (ok false when the statistic needs more).
func FitZipfObserved(cards []int64, samples int, top, share float64) (s float64, support []int64, ok bool) {
	features := sum64(cards)
	at := func(s float64) ([]int64, bool) {
		sup := make([]int64, len(cards))
		for t, c := range cards {
			if sup[t] = ObservedSupport(s, c, samples); sup[t] == 0 {
				return nil, false
			}
		}
		return sup, true
	}
	share0 := func(s float64) (float64, bool) {
		sup, ok := at(s)
		if !ok {
			return 0, false
		}
		return PooledShareOf(repeat(s, len(cards)), sup, features, top), true
	}
	lo, hi := 0.3, 3.0
	for hi-lo > 1e-5 {
		mid := (lo + hi) / 2
		if v, ok := share0(mid); ok && v < share {
			lo = mid
		} else {
			hi = mid
		}
	}
	sup, ok := at(lo)
	if !ok {
		return lo, nil, false
	}
	v, _ := share0(lo)
	return lo, sup, math.Abs(v-share) < 1e-3
}

// DSFRetentionOf is DSFRetention with an exponent and a support per table.
func DSFRetentionOf(s []float64, support []int64, batch int) float64 {
	var u float64
	for t := range s {
		u += ExpectedUnique(s[t], support[t], batch)
	}
	return u / float64(len(s)*batch)
}

func repeat(x float64, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = x
	}
	return xs
}

func sum64(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}
