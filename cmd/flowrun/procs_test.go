package main

import (
	"os"
	goruntime "runtime"
	"testing"
)

// A graph's stages get a P each (plus two for the bus), and the old
// GOMAXPROCS comes back after the run.
func TestStageProcs(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set in the environment: stageProcs leaves it alone")
	}
	old := goruntime.GOMAXPROCS(0)
	stages := old + 3
	restore := stageProcs(stages)
	if got := goruntime.GOMAXPROCS(0); got != stages+2 {
		t.Errorf("GOMAXPROCS %d during the run, want %d", got, stages+2)
	}
	restore()
	if got := goruntime.GOMAXPROCS(0); got != old {
		t.Errorf("GOMAXPROCS %d after the run, want %d back", got, old)
	}
	stageProcs(1)() // never lowered
	if got := goruntime.GOMAXPROCS(0); got != old {
		t.Errorf("GOMAXPROCS %d, want %d", got, old)
	}
}
