package graph

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
)

// FuzzLoadBuild feeds arbitrary files to Load and Build: user input must
// give errors, never panics. `go test` runs the seeds; `go test
// -fuzz=FuzzLoadBuild` explores further.
func FuzzLoadBuild(f *testing.F) {
	for _, seed := range []string{
		"stages: [a]",
		"stages: {load: 5}",
		"dataset: 5",
		"1: 2",
		"? [a]\n: b",
		`"": 3`,
		"stages: {\"\": {kind: load}}",
		"stages: {load: {kind: [x]}}",
		"stages: {load: {out: {a: b}}}",
		"stages: {load: null, train: {kind: train, in: x}}",
		"cache: {size: .nan}",
		"cache: {size: .inf}",
		"cache: {size: -.inf}",
		"seed: 1e30",
		"seed: 18446744073709551615",
		"dataset: {rows: 1e300}",
		"dataset: {rows: 9223372036854775807, tables: 9223372036854775807, dim: 9223372036854775807}",
		"devices: {gpu: null}",
		"devices: null",
		"a: &a [*a]",
		"x: &x {y: *x}",
		"base: &b {kind: load}\nstages: {l: {<<: *b, out: [o]}, t: {<<: [*b], kind: train, in: o}}",
		"stages:\n  load: {kind: load, out: [a]}\n  a: {kind: plan, in: a, out: [a], feedback: [a, a]}",
		"--- \n...\n",
		"\t",
		"stages: {load: {kind: load, out: [batches]}, train: {kind: train, in: batches, device: [1]}}",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data string) {
		path := filepath.Join(dir, "g.yaml")
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, src, err := config.Load(path, []string{"stages.extra.kind=train", "stages.extra.in=nowhere"})
		if err != nil {
			return
		}
		_, _ = Build(cfg, src, fakeKinds{}, &fakePlugins{})
	})
}
