package results

// MetricStaleness is the metrics.extra key of a run trained with bounded
// staleness (HECA Sec. 4.3; the stale stage): its staleness, present only
// when > 0, which marks the run inexact: it ends with another digest than
// the exact run, and its distance to it (held-out AUC, NE, logloss) is
// what a comparison of the two reports.
const MetricStaleness = "staleness"

// MetricStaleShare is the metrics.extra key of the share of the training
// batches' distinct rows (summed over tables) read one update old.
const MetricStaleShare = "stale_row_share"
