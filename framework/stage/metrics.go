package stage

import (
	"sync"

	"github.com/flowrun/flowrun/framework/results"
)

// Metrics collects the figures stages report during a run: named series
// (one value per batch, e.g. the training loss) and named totals (hits,
// bytes moved). It is safe for concurrent use.
type Metrics struct {
	mu     sync.Mutex
	series map[string][]Point
	totals map[string]float64
	values map[string]float64
	shadow []results.Shadow
}

// AddShadow records a shadow policy's what-if (results.json's shadows).
func (m *Metrics) AddShadow(s results.Shadow) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.shadow = append(m.shadow, s)
}

// Shadows returns a copy of the shadows recorded, in the order added.
func (m *Metrics) Shadows() []results.Shadow {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]results.Shadow(nil), m.shadow...)
}

// Point is one value of a series, at a batch.
type Point struct {
	Seq   uint64  `json:"batch"`
	Value float64 `json:"value"`
}

// Append adds a point to a series.
func (m *Metrics) Append(name string, seq uint64, v float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.series == nil {
		m.series = make(map[string][]Point)
	}
	m.series[name] = append(m.series[name], Point{seq, v})
}

// Add adds v to a total.
func (m *Metrics) Add(name string, v float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.totals == nil {
		m.totals = make(map[string]float64)
	}
	m.totals[name] += v
}

// Set records a single value (a final AUC, say).
func (m *Metrics) Set(name string, v float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.values == nil {
		m.values = make(map[string]float64)
	}
	m.values[name] = v
}

// Series returns a copy of a series.
func (m *Metrics) Series(name string) []Point {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Point(nil), m.series[name]...)
}

// Snapshot returns copies of every series, total and value.
func (m *Metrics) Snapshot() (series map[string][]Point, totals, values map[string]float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	series = make(map[string][]Point, len(m.series))
	for k, v := range m.series {
		series[k] = append([]Point(nil), v...)
	}
	totals = make(map[string]float64, len(m.totals))
	for k, v := range m.totals {
		totals[k] = v
	}
	values = make(map[string]float64, len(m.values))
	for k, v := range m.values {
		values[k] = v
	}
	return series, totals, values
}
