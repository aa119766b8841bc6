package data

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/config"
)

// WriteSynthetic writes to the batch file path the batches a run of d
// with seed would load from the synthetic generator: its d.Batches
// training batches, then its d.EvalBatches held-out ones. Read back with
// the same dataset (kind: file), they are the same batches. progress, if
// not nil, is called after every batch with the batches done and the
// total.
func WriteSynthetic(path string, seed uint64, d config.Dataset, progress func(done, total int)) (*Header, error) {
	syn, err := NewSynthetic(seed, d)
	if err != nil {
		return nil, err
	}
	h := Header{Source: "synthetic", Seed: seed, Tables: d.Tables, Lookups: d.Lookups, Dense: d.DenseFeatures,
		Rows: d.AllRows()}
	w, err := Create(path, h)
	if err != nil {
		return nil, err
	}
	a := NewArrays(d)
	ids := make([]int64, d.Tables*d.Lookups)
	total := d.Batches + d.EvalBatches
	perTable := d.BatchSize * d.Lookups
	for b := 0; b < total; b++ {
		if err := syn.Fill(uint64(b), b >= d.Batches, a); err != nil {
			w.Abort()
			return nil, err
		}
		for i := 0; i < d.BatchSize; i++ {
			for t := 0; t < d.Tables; t++ {
				copy(ids[t*d.Lookups:(t+1)*d.Lookups], a.IDs[t*perTable+i*d.Lookups:])
			}
			if err := w.Append(a.Labels[i], a.Dense[i*d.DenseFeatures:(i+1)*d.DenseFeatures], ids); err != nil {
				w.Abort()
				return nil, fmt.Errorf("batch %d: %w", b, err)
			}
		}
		if progress != nil {
			progress(b+1, total)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	h.Samples = w.Samples()
	return &h, nil
}
