package cpu

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// threadCPU is this thread's CPU time in seconds: a benchmark figure that
// other processes' load on a shared machine barely moves.
func threadCPU() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

// cpuMBps runs fn b.N times on a locked thread and reports MB/s of CPU
// time beside the wall figure.
func cpuMBps(b *testing.B, bytes int64, fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	start := threadCPU()
	for range b.N {
		fn()
	}
	sec := threadCPU() - start
	b.SetBytes(bytes)
	if sec > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/sec/1e6, "cpuMB/s")
	}
}
