package results

import "github.com/flowrun/flowrun/framework/serving"

// Serving is serving under load (RecPipe Sec. 4, docs/serving.md) on both
// clocks, each report labelled with its clock: Modeled replays the run's
// modeled per-batch stage times as per-query demands under the graph's
// serving section; Measured is the wall-clock latency of the batches the
// load stage released at Poisson arrival times (arrival: poisson).
type Serving struct {
	Modeled  *serving.Report `json:"modeled,omitempty"`
	Measured *serving.Report `json:"measured,omitempty"`
	// ModeledSweep is the modeled replay of the same queries at each rate
	// of serving.sweep_qps, in order (common random numbers).
	ModeledSweep []*serving.Report `json:"modeled_sweep,omitempty"`
}
