package engine

import (
	"fmt"
	"sort"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/sdk/region"
)

// profileFrequencies is the host's warm-up pass for a policy that asks
// for one (cache.Needs.ProfileBatches: a static top-N cache, Yin et al.,
// ScratchPipe Fig. 4b): it reads the IDs of the first n
// training batches from the run's own data source (deterministic, so the
// profile is the same on every run with the same seed), counts the lookups
// of every (table, row) inside the bags, and writes the counts as int64
// (table, row, count) triples, table by table and rows ascending, into a
// region the cache maps by name. The caller closes the region once the
// cache is configured.
func profileFrequencies(seed uint64, d config.Dataset, n int, rows *[]int64) (*region.Region, error) {
	src, done, err := data.OpenSource(seed, d)
	if err != nil {
		return nil, err
	}
	defer done()
	B, per := d.BatchSize, d.BatchSize*d.Lookups
	a := data.NewArrays(d)
	counts := make([]map[int64]int64, d.Tables)
	for t := range counts {
		counts[t] = map[int64]int64{}
	}
	for seq := range n {
		if err := src.Fill(uint64(seq), false, a); err != nil {
			return nil, fmt.Errorf("batch %d: %w", seq, err)
		}
		for t := range d.Tables {
			off := a.Offsets[t*(B+1) : (t+1)*(B+1)]
			for _, row := range a.IDs[t*per+int(off[0]) : t*per+int(off[B])] {
				counts[t][row]++
			}
		}
	}
	entries := 0
	*rows = make([]int64, len(counts))
	for t, c := range counts {
		entries += len(c)
		(*rows)[t] = int64(len(c))
	}
	r, err := region.Create("frequencies", int64(max(entries, 1))*24)
	if err != nil {
		return nil, err
	}
	v := region.Int64s(r.Bytes())
	i := 0
	for t, c := range counts {
		rows := make([]int64, 0, len(c))
		for row := range c {
			rows = append(rows, row)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i] < rows[j] })
		for _, row := range rows {
			v[i], v[i+1], v[i+2] = int64(t), row, c[row]
			i += 3
		}
	}
	return r, nil
}
