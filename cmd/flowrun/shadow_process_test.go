package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/results"
)

// A run of graphs/demo-shadow.yaml whose builtin shadows plan in processes
// of their own (own_process, the default: flowrun serves them, niced)
// reports exactly what the same run with them in its process reports,
// with the same digest.
func TestShadowBuiltinsInOwnProcess(t *testing.T) {
	graph := filepath.Join(repoGraphs, "demo-shadow.yaml")
	small := []string{"--set", "dataset.batches=12", "--set", "dataset.eval_batches=2"}
	own := runResults(t, graph, small...)
	inRun := runResults(t, graph, append(small, "--set", "stages.shadow.own_process=false")...)
	if own.Digest != inRun.Digest || len(own.Shadows) != 4 || len(inRun.Shadows) != 4 {
		t.Fatalf("digests %s and %s, %d and %d shadows", own.Digest, inRun.Digest, len(own.Shadows), len(inRun.Shadows))
	}
	for i, s := range own.Shadows {
		o := inRun.Shadows[i]
		if s.Plugin != o.Plugin || s.Hits != o.Hits || s.Misses != o.Misses || s.Evictions != o.Evictions ||
			s.LinkBytes["to_device"] != o.LinkBytes["to_device"] || s.ModeledLinkMs != o.ModeledLinkMs {
			t.Errorf("shadow %d in its own process %+v, in the run's %+v", i, s, o)
		}
	}
	// The plugin processes' memory is measured only where there are any.
	procs := func(mem []results.Memory) bool {
		return slices.ContainsFunc(mem, func(m results.Memory) bool { return strings.Contains(m.What, "plugin processes") })
	}
	if !procs(own.Memory) || procs(inRun.Memory) {
		t.Errorf("plugin processes: %v with own_process, %v without; want true, false", procs(own.Memory), procs(inRun.Memory))
	}
}
