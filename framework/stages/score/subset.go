package score

import (
	"context"
	"fmt"
	"math"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/region"
)

// subset is where a score stage that ranks some of a query's candidates
// (candidates: topk), or ranks them with a model of its own dim (model:
// NAME), lays them out for the kernel and the model: their bags, dense
// features and labels copied into a region of the stage's own, compacted
// to the m candidates ranked, then their pooled embeddings and scores.
// The batch's own arrays are left as they are, so a later stage still
// finds every candidate of the query by its index.
type subset struct {
	reg            *region.Region
	ids, offs      []int64
	dense, labels  []float32
	pooled, scores []float32
	// refs of the same arrays, for the plugins.
	idsRef, offsRef, denseRef, labelsRef, pooledRef, scoresRef region.Ref
	tables, batch, lookups, features, dim                      int
}

// newSubset makes the region for up to batchSize candidates of l's shape
// pooled at dim.
func newSubset(name string, l *batch.Layout, dim int) (*subset, error) {
	s := &subset{tables: l.Tables, batch: l.BatchSize, lookups: l.Lookups, features: l.DenseFeatures, dim: dim}
	T, n := int64(s.tables), int64(s.batch)
	sizes := []int64{8 * T * n * int64(s.lookups), 8 * T * (n + 1), 4 * n * int64(s.features), 4 * n, 4 * T * n * int64(dim), 4 * n}
	var total int64
	offs := make([]int64, len(sizes))
	for i, sz := range sizes {
		offs[i] = total
		total += (sz + 63) &^ 63
	}
	reg, err := region.Create("score-"+name, max(total, 64))
	if err != nil {
		return nil, fmt.Errorf("candidate region: %w", err)
	}
	s.reg = reg
	refs := []*region.Ref{&s.idsRef, &s.offsRef, &s.denseRef, &s.labelsRef, &s.pooledRef, &s.scoresRef}
	for i, r := range refs {
		*r = reg.Ref().Sub(offs[i], sizes[i])
	}
	b := reg.Bytes()
	part := func(i int) []byte { return b[offs[i] : offs[i]+sizes[i]] }
	s.ids, s.offs = region.Int64s(part(0)), region.Int64s(part(1))
	s.dense, s.labels = region.Float32s(part(2)), region.Float32s(part(3))
	s.pooled, s.scores = region.Float32s(part(4)), region.Float32s(part(5))
	return s, nil
}

// compact copies candidates cands (query indices) of b into the region:
// table t's bags, then its offsets over the m bags (relative to the
// table's first ID, as in a batch), the dense features and labels. It
// returns where each table's IDs start.
func (s *subset) compact(b *batch.Batch, l *batch.Layout, cands []int64) ([]int64, error) {
	ids, err := batch.IDs.View(b)
	if err != nil {
		return nil, err
	}
	offs, err := batch.Offsets.View(b)
	if err != nil {
		return nil, err
	}
	dense, labels, err := s.denseLabels(b)
	if err != nil {
		return nil, err
	}
	m, n := len(cands), s.batch
	start := make([]int64, s.tables)
	next := int64(0)
	for t := range s.tables {
		start[t] = next
		tIDs, tOffs := ids[int64(t)*int64(l.IDsPerTable):], offs[t*(n+1):(t+1)*(n+1)]
		o := s.offs[t*(m+1) : (t+1)*(m+1)]
		o[0] = 0
		for i, c := range cands {
			lo, hi := tOffs[c], tOffs[c+1]
			if lo < 0 || hi < lo || hi > int64(l.IDsPerTable) {
				return nil, fmt.Errorf("batch %d: table %d, candidate %d: bag [%d, %d) outside the batch's %d IDs", b.Seq, t, c, lo, hi, l.IDsPerTable)
			}
			copy(s.ids[next+o[i]:], tIDs[lo:hi])
			o[i+1] = o[i] + hi - lo
		}
		next += o[m]
	}
	F := s.features
	for i, c := range cands {
		copy(s.dense[i*F:(i+1)*F], dense[int(c)*F:(int(c)+1)*F])
		s.labels[i] = labels[c]
	}
	return start, nil
}

func (s *subset) denseLabels(b *batch.Batch) (dense, labels []float32, err error) {
	if dense, err = batch.Dense.View(b); err != nil {
		return nil, nil, err
	}
	labels, err = batch.Labels.View(b)
	return dense, labels, err
}

// touch initialises the rows the compacted bags name in tables, the
// tables concurrently as the load stage does (a model's own tables are
// not touched by the load stage; in the graph's tables it finds them
// touched).
func (s *subset) touch(tables *batch.Tables, start []int64, m int) error {
	ids := make([][]int64, s.tables)
	for t := range s.tables {
		ids[t] = s.ids[start[t] : start[t]+s.offs[t*(m+1)+m]]
	}
	return tables.TouchTables(ids)
}

func (s *subset) close() error { return s.reg.Close() }

// processSubset scores the candidates cands of b (ascending query
// indices) on the stage's model and tables, writes each one's score at its
// index in the batch's scores and NaN at every other index (a candidate
// an earlier stage dropped ranks below every survivor), and charges the
// devices for the m candidates only.
func (s *scorer) processSubset(ctx context.Context, b *batch.Batch, cands []int64) error {
	l, sub := s.set.Layout, s.sub
	m := len(cands)
	out, err := batch.Scores.View(b)
	if err != nil {
		return err
	}
	if m == 0 {
		for i := range out[:l.BatchSize] {
			out[i] = float32(math.NaN())
		}
		Scored.Set(b, 0)
		return nil
	}
	start, err := sub.compact(b, l, cands)
	if err != nil {
		return err
	}
	if err := sub.touch(s.set.Tables, start, m); err != nil {
		return err
	}
	T, dim := int64(sub.tables), int64(s.set.Tables.Dim)
	pooled := sub.pooledRef.Sub(0, 4*T*int64(m)*dim)
	tables, indices := s.set.Tables.Kernel(), sub.idsRef
	if s.stg != nil {
		tables, indices = s.stg.stage(s.set.Tables, sub.ids, sub.offs, start, m)
	}
	gather, err := s.set.Kernel.GatherReduce(ctx, &kernel.GatherReduceRequest{
		Tables: tables, Reduce: s.reduce, Out: pooled,
		Bags: kernel.Bags{Batch: m, Indices: indices, IndexStart: start, Offsets: sub.offsRef.Sub(0, 8*T*int64(m+1))},
	})
	if err != nil {
		return fmt.Errorf("gather-reduce: %w", err)
	}
	res, err := s.set.Model.Step(ctx, &model.StepRequest{Seq: b.Seq, Batch: m, Train: false, Pooled: pooled,
		Dense:  sub.denseRef.Sub(0, 4*int64(m*sub.features)),
		Labels: sub.labelsRef.Sub(0, 4*int64(m)), Scores: sub.scoresRef.Sub(0, 4*int64(m))})
	if err != nil {
		return fmt.Errorf("model step: %w", err)
	}
	for i := range out[:l.BatchSize] {
		out[i] = float32(math.NaN())
	}
	for i, c := range cands {
		out[c] = sub.scores[i]
	}
	s.keys = rowKeys(s.keys[:0], sub.ids, sub.offs, start, m)
	return s.charge(ctx, b, gather.BytesRead, pooled.Length, res, m)
}

// candidates is the query indices the stage ranks, ascending: the
// upstream filter's survivors, or every candidate.
func (s *scorer) candidates(b *batch.Batch) ([]int64, error) {
	var err error
	s.cands, err = batch.Candidates(b, "score "+s.set.Name, s.set.Layout.BatchSize, s.cfg.Candidates == Survivors, s.cands)
	return s.cands, err
}

// charge charges the gather to the host device and the transfer of the
// pooled embeddings and the dense model to the compute device: its FLOPs
// and, when the model lists them, its layers' shapes (a systolic array
// prices the tiling; FLOP-priced devices ignore them).
func (s *scorer) charge(ctx context.Context, b *batch.Batch, gathered, pooled int64, res *model.StepResult, m int) error {
	hostNs, err := stage.Charge(ctx, b, s.cfg.HostDevice, s.host, device.Op{Name: "gather-reduce", Kind: device.Read, Bytes: gathered, Keys: s.keys})
	if err != nil {
		return err
	}
	gpuNs, err := stage.Charge(ctx, b, s.cfg.ComputeDevice, s.gpu,
		device.Op{Name: "pooled-to-device", Kind: device.Transfer, Bytes: pooled},
		device.Op{Name: "mlp", Kind: device.Compute, FLOPs: res.FLOPs, Layers: res.Layers})
	if err != nil {
		return err
	}
	batch.GatherBytes.Set(b, gathered)
	Scored.Set(b, int64(m))
	if s.host != nil || s.gpu != nil {
		batch.ModeledNs.Set(b, hostNs+gpuNs)
	}
	return nil
}

// rowKeys appends the device.RowKey of every lookup of n bags (kernel.Bags'
// layout: table t's IDs from start[t], its offsets at t·(n+1)), the rows a
// device with a cache of its own (rpaccel) prices by its hit rate.
func rowKeys(dst []uint64, ids, offs, start []int64, n int) []uint64 {
	for t, st := range start {
		lo, hi := st+offs[t*(n+1)], st+offs[t*(n+1)+n]
		for _, row := range ids[lo:hi] {
			dst = append(dst, device.RowKey(t, row))
		}
	}
	return dst
}
