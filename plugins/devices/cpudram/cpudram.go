// Package cpudram is the "cpu-dram" device: host DRAM and CPU, priced by
// the shared cost model in plugins/devices/internal/costmodel. Its default
// profile is the host of ScratchPipe's and Tensor Casting's evaluations, an
// Intel Xeon E5-2698 v4 with 256 GB of DDR4 at 76.8 GB/s. Every time it
// returns is modeled time on that host, not a measurement.
package cpudram

import (
	"github.com/flowrun/flowrun/plugins/devices/internal/costmodel"
	"github.com/flowrun/flowrun/sdk/device"
)

// Name is the device's plugin name (builtin:cpu-dram).
const Name = "cpu-dram"

// DefaultProfile is ScratchPipe's host (Sec. V: "Intel Xeon E5-2698v4 (256
// GB DDR4, 76.8 GB/sec DRAM bandwidth)", "PCIe(gen3) with 16 GB/sec").
//
// GFLOPS is derived, not quoted: 20 cores × 2.2 GHz base × 32 FP32
// FLOP/cycle (two 8-wide AVX2 FMA units). The papers give no per-operation
// latency, so it is 0 until set; Efficiency is 1 (peak figures) until set.
// The link is the PCIe gen3 x16 bus the host shares with its accelerator.
func DefaultProfile() device.Profile {
	return device.Profile{
		Name:          "Intel Xeon E5-2698 v4, 256 GiB DDR4-2400 (ScratchPipe host)",
		CapacityBytes: 256 << 30,
		BandwidthGBps: 76.8,
		LinkGBps:      16,
		LatencyNs:     0,
		GFLOPS:        1408,
		Efficiency:    1,
		Source:        "ScratchPipe (MICRO'22) Sec. V / Intel ARK",
	}
}

// New returns the cpu-dram device.
func New() device.Device {
	return costmodel.New(costmodel.Spec{
		Name:        Name,
		Description: "host DRAM and CPU cost model (default: Xeon E5-2698 v4, 76.8 GB/s); all times are modeled",
		Defaults:    DefaultProfile(),
	})
}
