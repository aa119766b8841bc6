package data

import (
	"math"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
)

// TestFig1Readings computes the DSF retention each reading of HECA's
// Fig. 1 predicts at HECA's batch sizes (docs/benchmarks-heca.md, "Other
// readings of Fig. 1"); go test -v -run Fig1Readings ./framework/data/
// prints the table. It checks that each fit meets the statistic it reads,
// never the retention.
func TestFig1Readings(t *testing.T) {
	rows := config.CriteoKaggleRows
	n := len(rows)
	batches := []int{1024, 2048, 4096, 8192}
	show := func(name string, s []float64, sup []int64) {
		var r [4]float64
		for i, b := range batches {
			r[i] = 100 * DSFRetentionOf(s, sup, b)
		}
		top := 0.0 // the most frequent feature's expected count in the file
		for i := range s {
			top = max(top, CriteoKaggleSamples/newZipfSum(s[i], sup[i]).total)
		}
		t.Logf("%-34s %5.1f%% %5.1f%% %5.1f%% %5.1f%%  top feature %.2g", name, r[0], r[1], r[2], r[3], top)
	}
	t.Logf("%-34s %6s %6s %6s %6s", "reading", "1024", "2048", "4096", "8192")
	t.Logf("%-34s %5.0f%% %5.0f%% %5.0f%% %5.0f%%", "paper (Fig. 9 text)", 26.0, 21.0, 17.0, 13.0)

	show("pooled over the law (shipped)", repeat(CriteoKaggleZipfS, n), rows)

	per := FitZipfPerTable(rows, HECAFig1Top, HECAFig1Share)
	for i, s := range per {
		if s < fig1MaxS {
			if got := ZipfTopShare(s, rows[i], HECAFig1Top*float64(rows[i])); math.Abs(got-HECAFig1Share) > 1e-4 {
				t.Errorf("table %d: s %.4f gives %.4f", i, s, got)
			}
		}
	}
	t.Logf("per-table exponents: %.3f", per)
	show("per table, each its own law", per, rows)
	t.Logf("per table: the hottest %.2f%% of all features, pooled, carry %.2f%% of accesses", 100*HECAFig1Top, 100*PooledShareOf(per, rows, sum64(rows), HECAFig1Top))

	if testing.Short() {
		return // the observed fit bisects the supports of 26 tables per exponent: seconds
	}
	s, sup, ok := FitZipfObserved(rows, CriteoKaggleSamples, HECAFig1Top, HECAFig1Share)
	t.Logf("observed: s = %.4f (statistic met: %v), supports %v", s, ok, sup)
	if sup != nil {
		show("pooled over observed features", repeat(s, n), sup)
		if ok {
			if got := PooledShareOf(repeat(s, n), sup, sum64(rows), HECAFig1Top); math.Abs(got-HECAFig1Share) > 1e-3 {
				t.Errorf("observed fit gives %.4f", got)
			}
		}
	}
}

// TestCriteoKagglePerTableSampler: with criteo_skew per-table the
// generated batches keep what the per-table law expects
// (DSFRetentionOf over FitZipfPerTable) within one point, and a bad
// value is rejected.
func TestCriteoKagglePerTableSampler(t *testing.T) {
	d := config.Default().Dataset
	d.Locality, d.Tables, d.Lookups, d.DenseFeatures = config.CriteoKaggle, 26, 1, 13
	d.CriteoSkew = config.CriteoSkewPerTable
	per := FitZipfPerTable(config.CriteoKaggleRows, HECAFig1Top, HECAFig1Share)
	for _, bs := range []int{1024, 4096} {
		d.BatchSize = bs
		s, err := NewSynthetic(1, d)
		if err != nil {
			t.Fatal(err)
		}
		a := NewArrays(d)
		var unique, lookups int
		for b := uint64(0); b < 4; b++ {
			if err := s.Fill(b, false, a); err != nil {
				t.Fatal(err)
			}
			for tb := 0; tb < d.Tables; tb++ {
				seen := map[int64]struct{}{}
				for _, id := range a.IDs[tb*bs : (tb+1)*bs] {
					seen[id] = struct{}{}
				}
				unique += len(seen)
				lookups += bs
			}
		}
		got := float64(unique) / float64(lookups)
		want := DSFRetentionOf(per, config.CriteoKaggleRows, bs)
		t.Logf("batch %d: measured %.1f%%, the per-table law expects %.1f%%", bs, 100*got, 100*want)
		if math.Abs(got-want) > 0.01 {
			t.Errorf("batch %d: measured retention %.4f, the per-table law expects %.4f", bs, got, want)
		}
	}
	d.CriteoSkew = "per-field"
	if err := d.Validate(); err == nil {
		t.Error("criteo_skew per-field accepted")
	}
}
