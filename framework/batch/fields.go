package batch

import "fmt"

// The arrays the shipped stage kinds hand each other. They are declared
// here because stage kinds never import each other, so an array one kind
// writes and another reads needs a package both import; an array or stat
// only one kind uses is declared in that kind's own package.
var (
	// IDs is int64 [table][sample·lookup]: the load stage's lookups.
	IDs = NewArray[int64]("ids", Shape.IDs)
	// Offsets is int64 [table][sample+1], relative to the table's first ID.
	Offsets = NewArray[int64]("offsets", func(s Shape) int64 { return int64(s.Tables) * int64(s.BatchSize+1) })
	// Dense is float32 [sample][dense feature].
	Dense = NewArray[float32]("dense", func(s Shape) int64 { return int64(s.BatchSize) * int64(s.DenseFeatures) })
	// Labels is float32 [sample].
	Labels = NewArray[float32]("labels", batchSize)

	// Slots is int64, one per ID: the cache slot the plan gave it (or -1).
	Slots = NewArray[int64]("slots", Shape.IDs)
	// Hits is uint8, one per ID: 1 when the row was cached.
	Hits = NewArray[uint8]("hits", Shape.IDs)
	// Victims is int64 (table, row, slot) triples: the rows the plan
	// evicts (VictimCount of them).
	Victims = NewArray[int64]("victims", triples)

	// Pooled is float32 [table][sample][dim]: the pooled embeddings.
	Pooled = NewArray[float32]("pooled", Shape.Embeddings)
	// Grads is float32 [table][sample][dim]: their gradients.
	Grads = NewArray[float32]("grads", Shape.Embeddings)
	// Scores is float32 [sample]: the model's predictions.
	Scores = NewArray[float32]("scores", batchSize)

	// Cache traffic staged by collect for insert (ScratchPipe's [Collect]
	// → [Exchange] → [Insert]). Worst case: every ID of the batch a
	// distinct miss evicting a distinct victim. Buffers are sparse files,
	// so a batch that misses little touches (and pays for) few pages.

	// MissRows is float32 [miss][stride]: whole host rows (values,
	// optimizer state) of the missed IDs, one per distinct (table, row).
	MissRows = NewArray[float32]("miss_rows", rows)
	// MissIndex is int64 (table, row, slot) triples, parallel to MissRows.
	MissIndex = NewArray[int64]("miss_index", triples)
	// VictimRows is float32 [victim][stride]: whole Storage rows of the
	// victims, parallel to Victims.
	VictimRows = NewArray[float32]("victim_rows", rows)

	// Tensor Casting's casted index arrays (Algorithm 2), laid out like
	// IDs: table t's entries start at IndexStart[t].

	// CastSrc is int64: the bag whose gradient each sorted lookup gathers.
	CastSrc = NewArray[int64]("cast_src", Shape.IDs)
	// CastDst is int64: the coalesced gradient each sorted lookup reduces
	// into.
	CastDst = NewArray[int64]("cast_dst", Shape.IDs)
	// CastRows is int64: the row each coalesced gradient updates, one per
	// unique row.
	CastRows = NewArray[int64]("cast_rows", Shape.IDs)

	// TopK is int64 [k]: sample indices of the k highest scores, best
	// first.
	TopK = NewArray[int64]("topk", batchSize)
)

// The stats the shipped stage kinds hand each other, and the one the
// runtime reads from every stage.
var (
	// Misses is the plan's missed lookups (the cache policy's count).
	Misses = NewStat("misses")
	// VictimCount is how many triples of Victims the plan filled.
	VictimCount = NewStat("victims")
	// CollectedRows is how many rows collect staged in MissRows.
	CollectedRows = NewStat("collected_rows")
	// CollectedVictims is how many rows collect staged in VictimRows.
	CollectedVictims = NewStat("collected_victims")
	// GatherBytes is the bytes a gather-reduce read.
	GatherBytes = NewStat("gather_bytes")
	// ModeledNs is the modeled time a stage took for the batch. It is the
	// stage's own: the runtime clears it before each stage and reads it
	// after, for the modeled clock.
	ModeledNs = NewStat("modeled_ns")
)

// Outcomes is the first n scores and labels of b: what the model predicted
// for each sample and what happened, for the stages that evaluate them.
func Outcomes(b *Batch, n int) (scores, labels []float32, err error) {
	if scores, err = Scores.View(b); err != nil {
		return nil, nil, err
	}
	if labels, err = Labels.View(b); err != nil {
		return nil, nil, err
	}
	if len(scores) < n || len(labels) < n {
		return nil, nil, fmt.Errorf("batch %d: %d scores and %d labels, fewer than its %d samples", b.Seq, len(scores), len(labels), n)
	}
	return scores[:n], labels[:n], nil
}

// AllArrays lists every array this package declares, in the order of the
// buffer that holds them all (NewLayout).
func AllArrays() []Field {
	return []Field{IDs, Offsets, Dense, Labels, Slots, Hits, Victims, Pooled, Grads, Scores,
		MissRows, MissIndex, VictimRows, CastSrc, CastDst, CastRows, TopK}
}

func batchSize(s Shape) int64 { return int64(s.BatchSize) }
func triples(s Shape) int64   { return 3 * s.IDs() }
func rows(s Shape) int64      { return s.IDs() * int64(s.Stride) }
