package data

import (
	"math"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
)

// TestCriteoKaggleFit refits the criteo-kaggle exponent to HECA Fig. 1
// (the hottest 4.43% of features carry 90% of accesses, pooled over
// Kaggle's 26 fields) and checks the shipped constant is that fit.
func TestCriteoKaggleFit(t *testing.T) {
	s := FitZipfPooled(config.CriteoKaggleRows, HECAFig1Top, HECAFig1Share)
	if math.Abs(s-CriteoKaggleZipfS) > 1e-6 {
		t.Errorf("fit gives s = %.9f, CriteoKaggleZipfS is %.9f: update the constant and README.md", s, CriteoKaggleZipfS)
	}
	if got := PooledShare(CriteoKaggleZipfS, config.CriteoKaggleRows, HECAFig1Top); math.Abs(got-HECAFig1Share) > 1e-6 {
		t.Errorf("top %.2f%% of features carry %.6f of accesses, want %.2f", 100*HECAFig1Top, got, HECAFig1Share)
	}
	t.Logf("s = %.9f: top %.2f%% of %d features carry %.4f of accesses", s, 100*HECAFig1Top, sum(config.CriteoKaggleRows), PooledShare(s, config.CriteoKaggleRows, HECAFig1Top))
}

// TestPooledShareOfEqualTables: tables of one size pool to the share of
// one table, which for s → 0 is the fraction itself.
func TestPooledShareOfEqualTables(t *testing.T) {
	rows := []int64{1000, 1000, 1000}
	if got := PooledShare(1e-9, rows, 0.1); math.Abs(got-0.1) > 1e-3 {
		t.Errorf("uniform: top 10%% carry %.4f, want 0.1", got)
	}
	// Zipf(1) on 1000 rows: H(100)/H(1000) = 5.18738/7.48547.
	if got := PooledShare(1, rows, 0.1); math.Abs(got-5.187378/7.485471) > 1e-3 {
		t.Errorf("zipf 1: top 10%% carry %.4f, want %.4f", got, 5.187378/7.485471)
	}
}

// TestCriteoKaggleDSFRetention measures DSF retention (unique rows of a
// batch / its lookups, over all 26 tables) on generated criteo-kaggle
// batches at HECA's batch sizes, and checks it against the law's
// expectation (DSFRetention), which validates the sampler on Kaggle's
// table sizes. The figures are a prediction of the one-statistic fit;
// go test -v -run CriteoKaggleDSFRetention ./framework/data/ prints the
// table docs/benchmarks-heca.md quotes.
func TestCriteoKaggleDSFRetention(t *testing.T) {
	paper := map[int]float64{1024: 0.26, 2048: 0.21, 4096: 0.17, 8192: 0.13} // HECA Sec. 6, Fig. 9
	d := config.Default().Dataset
	d.Locality, d.Tables, d.Lookups, d.DenseFeatures = config.CriteoKaggle, 26, 1, 13
	const batches = 4
	t.Logf("batch  measured  expected  paper (seed 1, mean of %d batches)", batches)
	for _, bs := range []int{1024, 2048, 4096, 8192} {
		d.BatchSize = bs
		s, err := NewSynthetic(1, d)
		if err != nil {
			t.Fatal(err)
		}
		a := NewArrays(d)
		var unique, lookups int
		for b := uint64(0); b < batches; b++ {
			if err := s.Fill(b, false, a); err != nil {
				t.Fatal(err)
			}
			for tb := 0; tb < d.Tables; tb++ {
				ids := a.IDs[tb*bs : (tb+1)*bs]
				seen := make(map[int64]struct{}, len(ids))
				for _, id := range ids {
					if id < 0 || id >= config.CriteoKaggleRows[tb] {
						t.Fatalf("table %d: ID %d outside its %d rows", tb, id, config.CriteoKaggleRows[tb])
					}
					seen[id] = struct{}{}
				}
				unique += len(seen)
				lookups += len(ids)
			}
		}
		got := float64(unique) / float64(lookups)
		want := DSFRetention(CriteoKaggleZipfS, config.CriteoKaggleRows, bs)
		t.Logf("%5d  %7.1f%%  %7.1f%%  %4.0f%%", bs, 100*got, 100*want, 100*paper[bs])
		if math.Abs(got-want) > 0.01 {
			t.Errorf("batch %d: measured retention %.4f, the law expects %.4f", bs, got, want)
		}
	}
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}
