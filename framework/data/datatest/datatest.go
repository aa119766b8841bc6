// Package datatest writes the small fixture files the data tests convert
// and train on, in the real formats: Criteo Kaggle TSV and MovieLens
// ratings CSV. Fixtures are made by the tests, never downloaded; their
// labels come from a planted rule, so a model trained on them learns and
// its loss falls.
//
// It is for tests only and imports nothing of the framework.
package datatest

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
)

// CriteoTSV writes n lines of Criteo Kaggle TSV (label, 13 integer and 26
// hex categorical features), deterministic by seed, with what the real
// file has: missing integer and categorical fields, negative integers
// (I2), and categorical values that repeat with a skew. Each categorical
// value and each integer feature carries a planted weight; the label is
// drawn from the sigmoid of their sum.
func CriteoTSV(w io.Writer, n int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 0xc417e0))
	const vocab = 40
	// Each column's values: 32-bit hashes like Criteo's, and their weights.
	values := make([][]uint32, 26)
	weights := make([][]float64, 26)
	for c := range values {
		values[c] = make([]uint32, vocab)
		weights[c] = make([]float64, vocab)
		for v := range values[c] {
			values[c][v] = rng.Uint32()
			weights[c][v] = rng.NormFloat64()
		}
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.Reset()
		var score float64
		fields := make([]string, 0, 39)
		for f := 0; f < 13; f++ {
			switch {
			case rng.Float64() < 0.2:
				fields = append(fields, "") // missing
			case f == 1 && rng.Float64() < 0.1:
				fields = append(fields, fmt.Sprint(-rng.IntN(3)-1)) // I2 has -1, -2, -3
			default:
				x := int(math.Exp(rng.Float64() * 6))
				fields = append(fields, fmt.Sprint(x))
				if f < 3 {
					score += 0.3 * (math.Log1p(float64(x)) - 3)
				}
			}
		}
		for c := 0; c < 26; c++ {
			if rng.Float64() < 0.1 {
				fields = append(fields, "")
				continue
			}
			// Skewed: low indices far more often.
			v := int(float64(vocab) * math.Pow(rng.Float64(), 2))
			fields = append(fields, fmt.Sprintf("%08x", values[c][v]))
			if c < 6 {
				score += weights[c][v]
			}
		}
		label := 0
		if rng.Float64() < 1/(1+math.Exp(-2*score/math.Sqrt(6))) {
			label = 1
		}
		fmt.Fprintf(&b, "%d\t%s\n", label, strings.Join(fields, "\t"))
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// MovieLensCSV writes the ratings of users × movies (each user rates a
// random half of the movies) as ratings.csv, with its header, in
// (userId, movieId) order as the real file is, deterministic by seed.
// User and movie IDs are sparse like the real ones. A rating is 3 stars
// plus the user's and the movie's planted biases plus noise, in half
// stars from 0.5 to 5, so whether it reaches 4 can be learnt from the two
// IDs.
func MovieLensCSV(w io.Writer, users, movies int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 0x1e25))
	ub := make([]float64, users)
	mb := make([]float64, movies)
	for i := range ub {
		ub[i] = rng.NormFloat64()
	}
	for i := range mb {
		mb[i] = rng.NormFloat64()
	}
	if _, err := io.WriteString(w, "userId,movieId,rating,timestamp\n"); err != nil {
		return err
	}
	for u := 0; u < users; u++ {
		for m := 0; m < movies; m++ {
			if rng.IntN(2) == 0 {
				continue
			}
			r := 3 + ub[u] + mb[m] + 0.5*rng.NormFloat64()
			r = math.Min(5, math.Max(0.5, math.Round(r*2)/2))
			ts := 1_100_000_000 + rng.Int64N(400_000_000)
			if _, err := fmt.Fprintf(w, "%d,%d,%.1f,%d\n", 3*u+1, 7*m+2, r, ts); err != nil {
				return err
			}
		}
	}
	return nil
}
