// Package hbm is the "hbm" device: an accelerator's high-bandwidth memory
// and arithmetic, reached over a host link, priced by the shared cost model
// in plugins/devices/internal/costmodel. Its default profile is the NVIDIA
// V100 (32 GB HBM2 at 900 GB/s, PCIe gen3 x16 at 16 GB/s) of ScratchPipe's
// and Tensor Casting's evaluations. Every time it returns is modeled time
// on that GPU, not a measurement.
package hbm

import (
	"github.com/flowrun/flowrun/plugins/devices/internal/costmodel"
	"github.com/flowrun/flowrun/sdk/device"
)

// Name is the device's plugin name (builtin:hbm).
const Name = "hbm"

// DefaultProfile is ScratchPipe's GPU (Sec. V: "NVIDIA's V100 (32 GB, 900
// GB/sec of DRAM bandwidth)", "PCIe(gen3) with 16 GB/sec"), with the
// datasheet's 15.7 TFLOPS single-precision peak (SXM2). The papers give no
// per-operation latency, so it is 0 until set; Efficiency is 1 (peak
// figures) until set.
func DefaultProfile() device.Profile {
	return device.Profile{
		Name:          "NVIDIA V100 32 GB HBM2, PCIe gen3 x16",
		CapacityBytes: 32 << 30,
		BandwidthGBps: 900,
		LinkGBps:      16,
		LatencyNs:     0,
		GFLOPS:        15700,
		Efficiency:    1,
		Source:        "ScratchPipe Sec. V / NVIDIA V100 datasheet",
	}
}

// New returns the hbm device.
func New() device.Device {
	return costmodel.New(costmodel.Spec{
		Name:        Name,
		Description: "accelerator HBM cost model over a host link (default: V100, 900 GB/s, PCIe gen3 16 GB/s); all times are modeled",
		Defaults:    DefaultProfile(),
	})
}
