//go:build !linux

package gemm

// startThreadCPU has no per-thread clock here: no CPU-time rate.
func startThreadCPU() func() float64 { return func() float64 { return 0 } }
