package heca

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/checked"
)

// readFrequencies sums the host's (table, row, count) triples per table.
func readFrequencies(ref region.Ref, setup []plugin.Table) ([]map[int64]int64, error) {
	var m region.Mapper
	defer m.Close()
	v, err := checked.Int64s(&m, ref, ref.Length/8, "frequencies")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", plugin.ErrInvalidConfig, err)
	}
	counts := make([]map[int64]int64, len(setup))
	for t := range counts {
		counts[t] = map[int64]int64{}
	}
	for i := 0; i+3 <= len(v); i += 3 {
		t, row, n := v[i], v[i+1], v[i+2]
		if t < 0 || t >= int64(len(setup)) || row < 0 || row >= setup[t].Rows || n < 0 {
			return nil, plugin.FieldErrorf("frequencies", "triple %d (table %d, row %d, count %d) outside the run's %d tables or their rows, or negative",
				i/3, t, row, n, len(setup))
		}
		counts[t][row] += n
	}
	return counts, nil
}

// selectHot is one table's hot part: its rows ranked by count (ties: the
// lower row), the prefix that reaches the coverage (or every row counted
// at least minCount times), at most limit rows; a row's slot is its rank.
func selectHot(count map[int64]int64, coverage float64, minCount int64, limit int) map[int64]int32 {
	type rowCount struct{ row, n int64 }
	rows := make([]rowCount, 0, len(count))
	var total int64
	for row, n := range count {
		if n > 0 {
			rows = append(rows, rowCount{row, n})
			total += n
		}
	}
	slices.SortFunc(rows, func(a, b rowCount) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		return cmp.Compare(a.row, b.row)
	})
	k := 0
	if minCount > 0 {
		for k < len(rows) && rows[k].n >= minCount {
			k++
		}
	} else {
		// The fewest rows whose counts reach coverage·total, in integers
		// so that the choice does not hang on a rounding.
		need := int64(math.Ceil(coverage * float64(total)))
		for sum := int64(0); k < len(rows) && sum < need; k++ {
			sum += rows[k].n
		}
	}
	hot := make(map[int64]int32, min(k, limit))
	for s, rc := range rows[:min(k, limit)] {
		hot[rc.row] = int32(s)
	}
	return hot
}
