package runtime

import (
	"fmt"
	"math"
	"sort"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/sdk/region"
)

// defaultWarmupBatches is how many training batches the host profiles for
// a static cache when the graph does not say (the static policy's own
// default for first_batches).
const defaultWarmupBatches = 16

// wantsFrequencies reports whether the cache options ask for the host's
// access frequencies (profile: frequencies) without giving a region: the
// host then profiles the first training batches itself.
func wantsFrequencies(opts map[string]any) bool {
	p, _ := opts["profile"].(string)
	_, given := opts["frequencies"]
	return p == "frequencies" && !given
}

// warmupBatches reads warmup_batches from the cache options (the static
// policy's key), else the default, at most the run's training batches.
func warmupBatches(opts map[string]any, batches int) (int, error) {
	n := defaultWarmupBatches
	switch v := opts["warmup_batches"].(type) {
	case nil:
	case int:
		n = v
	case int64:
		n = int(v)
	case float64:
		if v != math.Trunc(v) {
			return 0, fmt.Errorf("cache.options.warmup_batches: %v is not a whole number", v)
		}
		n = int(v)
	default:
		return 0, fmt.Errorf("cache.options.warmup_batches: want a whole number, got %T", v)
	}
	if n < 1 {
		return 0, fmt.Errorf("cache.options.warmup_batches: must be ≥ 1, got %d", n)
	}
	return min(n, batches), nil
}

// profileFrequencies is the host's warm-up pass for a static top-N cache
// (Yin et al., ScratchPipe Fig. 4b): it reads the IDs of the first n
// training batches from the run's own data source (deterministic, so the
// profile is the same on every run with the same seed), counts the lookups
// of every (table, row) inside the bags, and writes the counts as int64
// (table, row, count) triples, table by table and rows ascending, into a
// region the cache maps by name. The caller closes the region once the
// cache is configured.
func profileFrequencies(seed uint64, d config.Dataset, n int) (*region.Region, error) {
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
	for _, c := range counts {
		entries += len(c)
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
