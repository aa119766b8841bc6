package report

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/search"
)

// A search's JSON draws the frontier figure (and nothing else: it has no
// runs); a frontier naming a design without a p99 at its QPS is refused.
func TestFrontierFigure(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	s := search.Result{Kind: search.Kind, QPS: []float64{100, 500},
		Designs: []search.Design{
			{ID: 0, Name: "a", NDCG: f(0.8), Serving: []search.Latency{{QPS: 100, P99Ms: f(2)}, {QPS: 500, P99Ms: f(3)}}},
			{ID: 1, Name: "b", NDCG: f(0.9), Serving: []search.Latency{{QPS: 100, P99Ms: f(8)}, {QPS: 500, Overload: "host"}}},
		},
		Frontiers: []search.Frontier{{QPS: 100, Designs: []int{0, 1}}, {QPS: 500, Designs: []int{0}}},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "search.json")
	if err := results.WriteJSON(path, s); err != nil {
		t.Fatal(err)
	}
	in, err := Read([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	written, err := Draw(in, dir, []string{"png", "svg"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range written {
		names = append(names, filepath.Base(w))
	}
	if !slices.Equal(names, []string{"frontier.png", "frontier.svg"}) {
		t.Errorf("wrote %v", names)
	}
	s.Frontiers[1].Designs = []int{1}
	if err := results.WriteJSON(path, s); err != nil {
		t.Fatal(err)
	}
	if _, err := Read([]string{path}); err == nil || !strings.Contains(err.Error(), "design 1") {
		t.Errorf("a frontier on an overloaded design: err %v", err)
	}
}
