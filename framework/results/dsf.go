package results

import "fmt"

// MetricDSFRatio is the metrics.extra key of the run's DSF ratio (HECA
// Sec. 5.2): distinct rows of a batch over its lookups, summed over the
// training batches and tables. The load stage reports it; the summary
// prints it. MetricDSFRatioOf(t) is table t's.
const MetricDSFRatio = "dsf_ratio"

// MetricDSFRatioOf is the metrics.extra key of table t's DSF ratio.
func MetricDSFRatioOf(t int) string { return fmt.Sprintf("%s.t%d", MetricDSFRatio, t) }
