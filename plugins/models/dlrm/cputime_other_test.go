//go:build !unix

package dlrm

// processCPU has no clock here: no CPU-time figure.
func processCPU() float64 { return 0 }
