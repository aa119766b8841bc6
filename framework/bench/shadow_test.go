package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/results"
)

// fakeShadowRunner is a fakeRunner that can shadow: CheckShadowed returns
// shadowed, or shadowErr, and records the points it was asked for.
type fakeShadowRunner struct {
	fakeRunner
	shadowed  *fakeGraph
	shadowErr error
	points    [][]string
}

func (f *fakeShadowRunner) CheckShadowed(path string, sets []string, points [][]string) (Graph, error) {
	f.points = points
	if f.shadowErr != nil {
		return nil, f.shadowErr
	}
	return f.shadowed, nil
}

// shadowCase is a runner whose full runs and whose one shadowed run both
// give hit rates 0.5 and 0.75 at cache.size 0.05 and 0.1.
func shadowCase() (*fakeShadowRunner, *fakeGraph) {
	full := &fakeGraph{name: "g", res: runResults("g", 2, 1, "d", &results.Cache{HitRate: 0.5})}
	shadowed := &fakeGraph{name: "g", res: &results.Results{Graph: "g", Batches: 10, Digest: "d",
		Shadows: []results.Shadow{
			{Plugin: "builtin:lru", Size: 0.05, HitRate: 0.5, Misses: 50, Evictions: 40, LinkBytes: map[string]int64{"to_device": 1000}},
			{Plugin: "builtin:lru", Size: 0.1, HitRate: 0.75, Misses: 25, Evictions: 10, LinkBytes: map[string]int64{"to_device": 500}},
		}}}
	return &fakeShadowRunner{fakeRunner: fakeRunner{graphs: map[string]*fakeGraph{"g.yaml": full}}, shadowed: shadowed}, full
}

func TestShadowSweepOneRun(t *testing.T) {
	r, full := shadowCase()
	sw, _ := ParseSweeps([]string{"cache.size=0.05,0.1"})
	c, err := Compare(context.Background(), r, Options{Graphs: []string{"g.yaml"}, Sweep: sw, Shadows: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.SweptBy != SweptByShadows || c.SweepNote != "" {
		t.Fatalf("swept by %q (%s), want shadows", c.SweptBy, c.SweepNote)
	}
	if full.runs != 0 || r.shadowed.runs != 1 {
		t.Errorf("full runs %d, shadowed runs %d; want 0 and 1", full.runs, r.shadowed.runs)
	}
	if len(r.points) != 2 || r.points[1][0] != "cache.size=0.1" {
		t.Errorf("shadowed points %v", r.points)
	}
	want := []float64{0.5, 0.75}
	if len(c.Runs) != 2 {
		t.Fatalf("%d rows, want 2", len(c.Runs))
	}
	for i, run := range c.Runs {
		if !run.FromShadows || run.HitRate == nil || *run.HitRate != want[i] || run.Shadow == nil || run.Error != "" {
			t.Errorf("row %d: %+v", i, run)
		}
	}
	if got := c.Runs[0].LinkBytesPerBatch["to_device"]; got != 100 {
		t.Errorf("to_device per batch %v, want 100", got)
	}
	var buf bytes.Buffer
	WriteTable(&buf, c)
	for _, s := range []string{"from shadows", "swept by shadows (one run)", "50 misses, 40 evictions", "for 1 runs"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, buf.String())
		}
	}
}

func TestShadowSweepFallsBack(t *testing.T) {
	cases := []struct {
		name, sweep, note string
		setup             func(r *fakeShadowRunner)
	}{
		{"other key", "dataset.batches=10,20", "only cache.size and cache.plugin", nil},
		{"invalid point", "cache.plugin=builtin:lru,builtin:x", "is invalid: holds no window", func(r *fakeShadowRunner) {
			r.CheckF = func(path string, sets []string) (Graph, error) {
				if strings.Join(sets, " ") == "cache.plugin=builtin:x" {
					return nil, errors.New("holds no window")
				}
				return r.graphs[path], nil
			}
		}},
		{"no plan stage", "cache.size=0.05,0.1", "no plan stage", func(r *fakeShadowRunner) {
			r.shadowErr = errors.New("the graph has no plan stage to shadow")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, full := shadowCase()
			if tc.setup != nil {
				tc.setup(r)
			}
			sw, _ := ParseSweeps([]string{tc.sweep})
			c, err := Compare(context.Background(), r, Options{Graphs: []string{"g.yaml"}, Sweep: sw, Shadows: true})
			if err != nil {
				t.Fatal(err)
			}
			if c.SweptBy != SweptByRuns || !strings.Contains(c.SweepNote, tc.note) {
				t.Errorf("swept by %q (%q), want full runs because %q", c.SweptBy, c.SweepNote, tc.note)
			}
			if r.shadowed.runs != 0 || len(c.Runs) != 2 || c.Runs[0].FromShadows {
				t.Errorf("shadowed runs %d, rows %+v", r.shadowed.runs, c.Runs)
			}
			if full.runs == 0 {
				t.Error("no full run after falling back")
			}
		})
	}
}

// A runner that cannot shadow sweeps by full runs, saying so.
func TestShadowSweepRunnerCannot(t *testing.T) {
	r, _ := shadowCase()
	sw, _ := ParseSweeps([]string{"cache.size=0.05,0.1"})
	c, err := Compare(context.Background(), &r.fakeRunner, Options{Graphs: []string{"g.yaml"}, Sweep: sw, Shadows: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.SweptBy != SweptByRuns || !strings.Contains(c.SweepNote, "cannot add a shadow stage") {
		t.Errorf("swept by %q (%q)", c.SweptBy, c.SweepNote)
	}
}
