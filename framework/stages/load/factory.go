package load

import (
	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
)

// Kind is the load stage's kind.
const Kind stage.Kind = "load"

// Samples and Lookups are the batch's samples and the length of its IDs
// array, for its span.
var Samples, Lookups = batch.NewStat("samples"), batch.NewStat("ids")

// DSFUnique and DSFLookups are DSF's figures of the batch (HECA Sec.
// 5.2), for its span: the distinct IDs of each table, summed over tables,
// and the lookups they stand for. dsf_unique / dsf_lookups is the batch's
// dsf_ratio; results.json has the run's (metrics.extra dsf_ratio, and
// dsf_ratio.tN per table).
var DSFUnique, DSFLookups = batch.NewStat("dsf_unique"), batch.NewStat("dsf_lookups")

// NewFactory returns the load stage's factory.
func NewFactory() stage.Factory {
	return stage.New(Kind, Config{Eval: true, Arrival: ArrivalNone}, create,
		stage.AsSource(),
		stage.WithFields([]batch.Field{batch.IDs, batch.Offsets, batch.Dense, batch.Labels, Samples, Lookups, DSFUnique, DSFLookups}, nil))
}
