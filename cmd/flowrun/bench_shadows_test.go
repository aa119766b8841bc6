package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// shadowWiring finds the stage that plans by what its config declares:
// in the demo, load feeds plan and exchange's link is gpu's; a graph whose
// stages serve no cache policy has nothing to shadow.
func TestShadowWiring(t *testing.T) {
	g, err := validateGraph(demo, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := shadowWiring(g)
	if err != nil {
		t.Fatal(err)
	}
	if w.producer != "load" || !slices.Equal(w.outs, []string{"batches", sweepShadowSubject}) || w.stage["device"] != "gpu" || w.stage["in"] != sweepShadowSubject {
		t.Errorf("wiring %+v", w)
	}
	g, err = validateGraph(filepath.Join(repoGraphs, "no-cache.yaml"), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shadowWiring(g); err == nil || !strings.Contains(err.Error(), "no plan stage") {
		t.Errorf("no-cache.yaml: %v, want no plan stage", err)
	}
}
