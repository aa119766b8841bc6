//go:build linux

package gemm

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// startThreadCPU locks the goroutine to its thread and returns a function
// that unlocks it and returns the thread's CPU seconds since: with -cpu 1
// a product's whole work runs on that thread, so on a machine shared with
// other jobs this rate is the product's own, where the wall-clock rate is
// mostly the scheduler's share of a core.
func startThreadCPU() func() float64 {
	runtime.LockOSThread()
	t0 := threadCPU()
	return func() float64 {
		defer runtime.UnlockOSThread()
		return threadCPU() - t0
	}
}

func threadCPU() float64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9
}
