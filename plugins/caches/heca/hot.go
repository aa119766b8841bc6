package heca

import (
	"math"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// readFrequencies sums the host's (table, row, count) triples per table.
func readFrequencies(ref region.Ref, setup []plugin.Table) ([]map[int64]int64, error) {
	counts := make([]map[int64]int64, len(setup))
	for t := range counts {
		counts[t] = map[int64]int64{}
	}
	err := plankit.ReadFrequencies(ref, setup, func(t int, row, n int64) { counts[t][row] += n })
	return counts, err
}

// selectHot is one table's hot part: its rows ranked by count (ties: the
// lower row), the prefix that reaches the coverage (or every row counted
// at least minCount times), at most limit rows; a row's slot is its rank.
func selectHot(count map[int64]int64, coverage float64, minCount int64, limit int) map[int64]int32 {
	rows := plankit.RankRows(count)
	var total int64
	for _, rc := range rows {
		total += rc.N
	}
	k := 0
	if minCount > 0 {
		for k < len(rows) && rows[k].N >= minCount {
			k++
		}
	} else {
		// The fewest rows whose counts reach coverage·total, in integers
		// so that the choice does not hang on a rounding.
		need := int64(math.Ceil(coverage * float64(total)))
		for sum := int64(0); k < len(rows) && sum < need; k++ {
			sum += rows[k].N
		}
	}
	hot := make(map[int64]int32, min(k, limit))
	for s, rc := range rows[:min(k, limit)] {
		hot[rc.Row] = int32(s)
	}
	return hot
}
