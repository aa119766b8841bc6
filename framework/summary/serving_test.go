package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/serving"
)

// Each clock's serving line says which clock it is; an overloaded one
// says OVERLOAD and prints no percentiles.
func TestServingLines(t *testing.T) {
	share := 0.978
	r := &results.Results{Serving: &results.Serving{
		Modeled: &serving.Report{Clock: serving.Modeled, Arrival: serving.Poisson, Queries: 20000, OfferedQPS: 8000, AchievedQPS: 7917,
			LatencyMs: &serving.Percentiles{P50: 0.267, P95: 0.795, P99: 1.196, Mean: 0.329}, SLAMs: 1, WithinSLA: &share,
			Servers: map[string]int{"host": 64}, Utilisation: map[string]float64{"host": 0.71}, Bottleneck: "host", CapacityQPS: 11223},
		Measured: &serving.Report{Clock: serving.Measured, Arrival: serving.Poisson, Queries: 180, OfferedQPS: 3000, AchievedQPS: 143,
			Overload: &serving.Overload{Reason: "served 143 QPS of the 2793 that arrived (measured)", LastLatencyMs: 1194, QueueAtHalf: 40, QueueAtEnd: 150}},
	}}
	var b bytes.Buffer
	Write(&b, r)
	out := b.String()
	for _, want := range []string{
		"serving      modeled: 20,000 queries at 8,000 QPS offered (poisson); latency p50 0.267 ms  p95 0.795 ms  p99 1.196 ms  mean 0.329 ms; achieved 7,917 QPS; 97.8% within 1.000 ms; bottleneck host at 71% of 64 server(s), capacity 11,223 QPS\n",
		"             measured: 180 queries at 3,000 QPS offered (poisson); achieved 143 QPS\n",
		"OVERLOAD (measured): served 143 QPS of the 2793 that arrived (measured); queries in the system 40 at mid-stream, 150 at the end; the last query waited 1,194 ms; no percentiles: no steady state\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// The sweep is a table, one row per rate, overload marked.
func TestServingSweepTable(t *testing.T) {
	r := &results.Results{Serving: &results.Serving{
		Modeled: &serving.Report{Clock: serving.Modeled, Arrival: serving.Poisson, Queries: 10, OfferedQPS: 1},
		ModeledSweep: []*serving.Report{
			{Clock: serving.Modeled, OfferedQPS: 2000, AchievedQPS: 1979, LatencyMs: &serving.Percentiles{P50: 0.094, P95: 0.224, P99: 0.294},
				Utilisation: map[string]float64{"host": 0.18}, Bottleneck: "host"},
			{Clock: serving.Modeled, OfferedQPS: 12000, AchievedQPS: 11215, Overload: &serving.Overload{Reason: "x"},
				Utilisation: map[string]float64{"host": 1.07}, Bottleneck: "host"},
		},
	}}
	var b bytes.Buffer
	Write(&b, r)
	want := `serving sweep (modeled; the same queries at each rate, common random numbers):
  offered QPS  achieved QPS       p50       p95       p99  within SLA  bottleneck use
        2,000         1,979  0.094 ms  0.224 ms  0.294 ms           -             18%
       12,000        11,215         -         -         -           -            107%  OVERLOAD: no steady state
`
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks the sweep table:\n%s", b.String())
	}
}
