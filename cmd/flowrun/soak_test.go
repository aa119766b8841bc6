package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSoakScratchPipeDefaultTables trains on the ScratchPipe default's
// tables (8 × 10M rows × 128 dims: 40 GB of embeddings) and checks that
// the virtual host tables keep the run to the rows it touches. Too heavy
// for the default suite: FLOWRUN_SOAK=1 runs it (alone: `go test
// ./cmd/flowrun -run Soak`, so that the peak resident set is this run's).
func TestSoakScratchPipeDefaultTables(t *testing.T) {
	if os.Getenv("FLOWRUN_SOAK") != "1" {
		t.Skip("set FLOWRUN_SOAK=1 to train on 40 GB of virtual host tables")
	}
	args := []string{"--set", "dataset.rows=10000000", "--set", "dataset.tables=8",
		"--set", "dataset.dim=128", "--set", "dataset.batches=20"}
	graph := filepath.Join(repoGraphs, "no-cache.yaml")
	if _, err := os.Stat(graph); err == nil {
		// The graph's default dlrm preset has dim 16; ScratchPipe's own
		// model has the tables' 128.
		args = append(args, "--set", "model.options.preset=scratchpipe")
	} else {
		graph = demo
	}
	res := runResults(t, graph, args...)
	const limit = 8 << 30 // "well under" the 24 GiB of the machine the issue names
	if res.HostRSSPeakBytes <= 0 || res.HostRSSPeakBytes > limit {
		t.Errorf("peak RSS %d bytes, want ≤ %d", res.HostRSSPeakBytes, limit)
	}
	for _, m := range res.Memory {
		t.Logf("%-110s %8.1f MiB of %8.1f MiB", m.What, float64(m.PeakBytes)/(1<<20), float64(m.VirtualBytes)/(1<<20))
		if strings.HasPrefix(m.What, "host tables: allocated") && (m.VirtualBytes != 8*10_000_000*128*4 && m.VirtualBytes != 8*10_000_000*256*4 || m.PeakBytes > m.VirtualBytes/10) {
			t.Errorf("host tables: %d of %d bytes allocated", m.PeakBytes, m.VirtualBytes)
		}
	}
	t.Logf("%s: %d batches in %.1f s, peak RSS %.2f GiB, digest %s", filepath.Base(graph), res.Batches, res.WallMs/1e3, float64(res.HostRSSPeakBytes)/(1<<30), res.Digest)
}
