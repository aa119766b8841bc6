package summary

import (
	"bytes"
	"strings"
	"testing"
)

// The held-out line carries the accuracy, and the cache lines the hit
// rate per distinct row of a batch, where the results have them.
func TestSummaryAccuracyAndDistinctHits(t *testing.T) {
	r := fixedResults()
	acc := 0.7712
	r.Metrics.Accuracy = &acc
	if r.Cache == nil {
		t.Fatal("the fixture has no cache: the distinct-row line cannot be checked")
	}
	r.Cache.DistinctHits, r.Cache.DistinctMisses, r.Cache.DistinctHitRate = 3, 1, 0.75
	var b bytes.Buffer
	Write(&b, r)
	for _, s := range []string{"accuracy 0.7712", "per distinct row of a batch: hit rate 75.0% (3 hits, 1 misses)"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, b.String())
		}
	}
}
