package plugin

import (
	"runtime"
	"testing"
)

func TestParallelismBoundedByCoresAndProcs(t *testing.T) {
	old := runtime.GOMAXPROCS(runtime.NumCPU() + 7)
	defer runtime.GOMAXPROCS(old)
	if got := Parallelism(); got != runtime.NumCPU() {
		t.Errorf("GOMAXPROCS above the cores: Parallelism() = %d, want the %d CPUs", got, runtime.NumCPU())
	}
	runtime.GOMAXPROCS(1)
	if got := Parallelism(); got != 1 {
		t.Errorf("GOMAXPROCS 1: Parallelism() = %d, want 1", got)
	}
}
