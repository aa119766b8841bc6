package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/results"
)

// shadowRun is a run of 10 training batches with shadows of lru at two
// sizes and lfu at one, costed on gpu's link.
func shadowRun() *results.Results {
	r := fixedRun("demo-shadow", 0.01)
	r.Batches = 10
	sh := func(plugin string, size, hit, linkMs float64) results.Shadow {
		return results.Shadow{Stage: "shadow", Plugin: plugin, Size: size, Rows: int64(size * 1000), HitRate: hit, Link: "gpu", ModeledLinkMs: linkMs}
	}
	r.Shadows = []results.Shadow{sh("builtin:lru", 0.1, 0.8, 5), sh("builtin:lru", 0.05, 0.6, 10), sh("bin/flowrun-cache-lfu", 0.05, 0.65, 9)}
	return r
}

// Every shadow of a run is a point on its policy's line, in both panels:
// hit rate in %, modeled link time per training batch, sorted by size in
// % of the rows; a bench sweep by shadows adds its own lines, labelled
// with their source once there are several.
func TestShadowFigure(t *testing.T) {
	in := &Input{Runs: []Run{{Label: "demo-shadow", Res: shadowRun()}}}
	lines, percent := collectShadows(in.shadowSources())
	if !percent || len(lines) != 2 || lines[0].label != "lru" || lines[1].label != "flowrun-cache-lfu" {
		t.Fatalf("lines %+v, percent %v", lines, percent)
	}
	lru := lines[0]
	if lru.hit[0].X != 5 || lru.hit[0].Y != 60 || lru.hit[1].X != 10 || lru.hit[1].Y != 80 || lru.link[0].Y != 1 || lru.link[1].Y != 0.5 {
		t.Errorf("lru: hit %v, link %v", lru.hit, lru.link)
	}
	s := results.Shadow{Plugin: "builtin:belady", Size: 0.05, Rows: 50, HitRate: 0.9}
	in.Benches = []*bench.Comparison{{Runs: []bench.Run{{Graph: "g", Batches: 4, FromShadows: true, Shadow: &s}, {Graph: "g", Point: []string{"x"}}}}}
	lines, _ = collectShadows(in.shadowSources())
	if len(lines) != 3 || lines[2].label != "belady · g (shadows)" || lines[2].linked || len(lines[2].link) != 0 || lines[0].label != "lru · demo-shadow" {
		t.Fatalf("with a bench sweep: %+v", lines)
	}
	dir := t.TempDir()
	written, err := Draw(&Input{Runs: []Run{{Label: "demo-shadow", Res: shadowRun()}}}, dir, []string{"svg"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(written, " "), "shadows.svg") {
		t.Fatalf("wrote %v", written)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "shadows.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"hit rate", "modeled link time per batch", "flowrun-cache-lfu", "% of each table"} {
		if !strings.Contains(string(svg), word) {
			t.Errorf("shadows.svg without %q", word)
		}
	}
}
