package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/results"
)

// shadowPolicies are every built-in policy, at the demo's size and one
// other, as a shadow stage lists them.
var shadowPolicies = []struct {
	plugin string
	size   float64
}{
	{"builtin:lru", 0.05}, {"builtin:lru", 0.1}, {"builtin:lfu", 0.05}, {"builtin:belady", 0.05},
	{"builtin:belady", 0.02}, {"builtin:static", 0.05}, {"builtin:heca", 0.05},
	{"builtin:scratchpipe", 0.05}, {"builtin:none", 0.05},
}

// withShadows writes graph src with a shadow stage fed by load beside plan,
// listing policies, and returns its path.
func withShadows(t *testing.T, src string, policies string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "    kind: load\n    out: [batches]", "    kind: load\n    out: [batches, shadowed]", 1)
	s = strings.Replace(s, "\nstages:\n", "\nstages:\n  shadow:\n    kind: shadow\n    in: shadowed\n    device: gpu\n    policies:\n"+policies, 1)
	path := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestShadowsEqualFullRuns: one run of the demo with a shadow of every
// built-in policy (Belady's upper bound included) ends with the digest of
// the run without shadows, and each shadow's hits, misses and evictions
// equal those of a full run serving that policy and size on the same seed.
func TestShadowsEqualFullRuns(t *testing.T) {
	var list strings.Builder
	for _, p := range shadowPolicies {
		fmt.Fprintf(&list, "      - {plugin: %q, size: %g}\n", p.plugin, p.size)
	}
	kinds, b := stages(), builtins()
	plain, err := runIn(t, kinds, b, demo)
	if err != nil {
		t.Fatal(err)
	}
	shadowed, err := runIn(t, kinds, b, withShadows(t, demo, list.String()))
	if err != nil {
		t.Fatal(err)
	}
	if shadowed.Digest != plain.Digest {
		t.Errorf("digest with shadows %s, without %s", shadowed.Digest, plain.Digest)
	}
	if sc, pc := shadowed.Cache, plain.Cache; sc.Hits != pc.Hits || sc.Misses != pc.Misses || sc.Evictions != pc.Evictions {
		t.Errorf("serving cache with shadows %+v, without %+v", shadowed.Cache, plain.Cache)
	}
	if len(shadowed.Shadows) != len(shadowPolicies) {
		t.Fatalf("%d shadows reported, want %d", len(shadowed.Shadows), len(shadowPolicies))
	}
	for i, p := range shadowPolicies {
		got := shadowed.Shadows[i]
		full, err := runIn(t, kinds, b, demo, "cache.plugin="+p.plugin, fmt.Sprintf("cache.size=%g", p.size))
		if err != nil {
			t.Fatalf("%s at %g: %v", p.plugin, p.size, err)
		}
		var want results.Cache
		if full.Cache != nil {
			want = *full.Cache
		}
		if got.Plugin != p.plugin || got.Hits != want.Hits || got.Misses != want.Misses || got.Evictions != want.Evictions || got.Rows != want.Rows {
			t.Errorf("shadow %s at %g: hits %d misses %d evictions %d rows %d; the full run: %d %d %d %d",
				p.plugin, p.size, got.Hits, got.Misses, got.Evictions, got.Rows, want.Hits, want.Misses, want.Evictions, want.Rows)
		}
		if got.Batches != shadowed.Batches+shadowed.EvalBatches {
			t.Errorf("shadow %s planned %d batches, the run has %d", p.plugin, got.Batches, shadowed.Batches+shadowed.EvalBatches)
		}
	}
}

// TestShadowsInAStorageGraph: in graphs/heca.yaml (sequential, with
// Storage and collect) each shadow's counts and the bytes it would send
// each way equal those of a full run of its policy; in the pipelined
// graphs/scratchpipe.yaml a shadow that holds no window is refused as the
// serving cache would be, by flowrun validate at the policy's key.
func TestShadowsInAStorageGraph(t *testing.T) {
	small := []string{"dataset.batches=12", "dataset.eval_batches=2", "dataset.rows=50000", "dataset.batch_size=64"}
	heca := "{profile: frequencies, warmup_batches: 16, hot_max_fraction: 0.5, hash: mix64}"
	policies := []struct{ plugin, options string }{
		{"builtin:lru", "null"}, {"builtin:lfu", "null"}, {"builtin:belady", "null"},
		{"builtin:heca", heca}, {"builtin:scratchpipe", "null"}, {"builtin:static", "null"},
	}
	var list strings.Builder
	for _, p := range policies {
		opts := ""
		if p.options != "null" {
			opts = ", options: " + p.options
		}
		fmt.Fprintf(&list, "      - {plugin: %q, size: 0.05%s}\n", p.plugin, opts)
	}
	kinds, b := stages(), builtins()
	graph := filepath.Join(repoGraphs, "heca.yaml")
	plain, err := runIn(t, kinds, b, graph, small...)
	if err != nil {
		t.Fatal(err)
	}
	shadowed, err := runIn(t, kinds, b, withShadows(t, graph, list.String()), small...)
	if err != nil {
		t.Fatal(err)
	}
	if shadowed.Digest != plain.Digest {
		t.Errorf("digest with shadows %s, without %s", shadowed.Digest, plain.Digest)
	}
	for i, p := range policies {
		got := shadowed.Shadows[i]
		full, err := runIn(t, kinds, b, graph, append([]string{"cache.plugin=" + p.plugin, "cache.options=" + p.options}, small...)...)
		if err != nil {
			t.Fatalf("%s: %v", p.plugin, err)
		}
		want := full.Cache
		if got.Hits != want.Hits || got.Misses != want.Misses || got.Evictions != want.Evictions ||
			got.LinkBytes["to_device"] != want.LinkBytes["to_device"] || got.LinkBytes["to_host"] != want.LinkBytes["to_host"] {
			t.Errorf("shadow %s: %+v; the full run: %+v", p.plugin, got, want)
		}
	}
	_, err = runIn(t, kinds, b, withShadows(t, filepath.Join(repoGraphs, "scratchpipe.yaml"), "      - {plugin: builtin:lru, size: 0.05}\n"), append(small, "cache.size=0.1")...)
	if err == nil || !strings.Contains(err.Error(), "stages::shadow::policies::0::plugin") || !strings.Contains(err.Error(), "holds no pipeline window") {
		t.Errorf("a windowless shadow in a pipelined graph with Storage: %v, want it refused", err)
	}
}

// TestShadowOutOfProcess: a shadow policy served by its binary, written
// relative to the graph file as every plugin reference is, reports what
// the same policy built in reports.
func TestShadowOutOfProcess(t *testing.T) {
	bin := needBins(t, "flowrun-cache-lfu")[0]
	dir := t.TempDir()
	if err := os.Symlink(filepath.Dir(bin), filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	g := withShadows(t, demo, "      - {plugin: builtin:lfu, size: 0.05}\n      - {plugin: bin/flowrun-cache-lfu, size: 0.05}\n")
	path := filepath.Join(dir, "demo-shadow.yaml")
	if err := os.Rename(g, path); err != nil {
		t.Fatal(err)
	}
	res, err := runIn(t, stages(), builtins(), path)
	if err != nil {
		t.Fatal(err)
	}
	in, out := res.Shadows[0], res.Shadows[1]
	if in.Hits != out.Hits || in.Misses != out.Misses || in.Evictions != out.Evictions || in.LinkBytes["to_device"] != out.LinkBytes["to_device"] {
		t.Errorf("built in %+v, out of process %+v", in, out)
	}
}
