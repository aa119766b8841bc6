package plankit

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/checked"
)

// ReadFrequencies reads the host's warm-up profile (cache.Options
// Frequencies: int64 (table, row, count) triples) and hands add each
// triple, refusing one outside tables or with a negative count at the
// "frequencies" key.
func ReadFrequencies(ref region.Ref, tables []plugin.Table, add func(table int, row, n int64)) error {
	var m region.Mapper
	defer m.Close()
	v, err := checked.Int64s(&m, ref, ref.Length/8, "frequencies")
	if err != nil {
		return fmt.Errorf("%w: %w", plugin.ErrInvalidConfig, err)
	}
	for i := 0; i+3 <= len(v); i += 3 {
		t, row, n := v[i], v[i+1], v[i+2]
		if t < 0 || t >= int64(len(tables)) || row < 0 || row >= tables[t].Rows || n < 0 {
			return plugin.FieldErrorf("frequencies", "triple %d (table %d, row %d, count %d) outside the run's %d tables or their rows, or negative",
				i/3, t, row, n, len(tables))
		}
		add(int(t), row, n)
	}
	return nil
}

// RowCount is a row and its count in a profile.
type RowCount[N cmp.Ordered] struct {
	Row int64
	N   N
}

// RankRows is the rows counted more than zero times, highest count first,
// ties by the lower row: the order a static or hot part fills its slots
// in (a row's slot is its rank).
func RankRows[N int64 | uint64](count map[int64]N) []RowCount[N] {
	rows := make([]RowCount[N], 0, len(count))
	for row, n := range count {
		if n > 0 {
			rows = append(rows, RowCount[N]{row, n})
		}
	}
	slices.SortFunc(rows, func(a, b RowCount[N]) int {
		if c := cmp.Compare(b.N, a.N); c != 0 {
			return c
		}
		return cmp.Compare(a.Row, b.Row)
	})
	return rows
}
