// Package hbm is the "hbm" device: an accelerator's high-bandwidth memory
// and arithmetic, reached over a host link, priced by the shared cost model
// in sdk/device/costmodel. Its default profile is the NVIDIA
// V100 (32 GB HBM2 at 900 GB/s, PCIe gen3 x16 at 16 GB/s) of ScratchPipe's
// and Tensor Casting's evaluations; A100 and H100 profiles and PCIe gen4 and
// gen5 links are a `profile` or `link` option away. Every time it returns
// is modeled time on that GPU, not a measurement.
package hbm

import (
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/costmodel"
)

// Name is the device's plugin name (builtin:hbm).
const Name = "hbm"

const (
	// Efficiency is the sustained share of peak HBM bandwidth: a V100's
	// device-to-device cudaMemcpy reaches ≈790 of its 900 GB/s. Measured
	// (not fitted: the no-cache baseline keeps no rows on the GPU).
	Efficiency = 0.88
	// ComputeEfficiency is the sustained share of peak FP32 arithmetic
	// of the dense DLRM forward and backward, fitted on ScratchPipe's
	// no-cache baseline (docs/devices.md, "Calibration").
	ComputeEfficiency = 0.241
)

const (
	memorySource  = "; efficiency 0.88: V100 device-to-device cudaMemcpy ≈790 of 900 GB/s"
	computeSource = "; compute_efficiency calibrated on ScratchPipe's no-cache baseline (docs/devices.md#calibration)"
	carried       = "; efficiency and compute_efficiency carried over from the V100 (not measured for this part)"
)

// Spec is the device: its name, its description and the named profiles
// of `profile`.
func Spec() costmodel.Spec {
	p := func(name string, capacity int64, gbps, gflops float64, link, source string) costmodel.Params {
		return costmodel.Params{
			Profile: device.Profile{Name: name, CapacityBytes: capacity, BandwidthGBps: gbps, GFLOPS: gflops,
				Efficiency: Efficiency, Source: source},
			Link: link, ComputeEfficiency: ComputeEfficiency,
		}
	}
	return costmodel.Spec{Name: Name, Default: DefaultProfile,
		Description: "accelerator HBM cost model over a host link (default: V100, 900 GB/s, PCIe gen3 16 GB/s, calibrated); all times are modeled",
		Profiles: map[string]costmodel.Params{
			// ScratchPipe Sec. V: "NVIDIA's V100 (32 GB, 900 GB/sec of DRAM
			// bandwidth)", "PCIe(gen3) with 16 GB/sec"; 15.7 TFLOPS FP32 (SXM2).
			"v100": p("NVIDIA V100 32 GB HBM2", 32<<30, 900, 15700, "pcie3",
				"ScratchPipe Sec. V / NVIDIA V100 datasheet"+memorySource+computeSource),
			"a100": p("NVIDIA A100 40 GB HBM2", 40<<30, 1555, 19500, "pcie4",
				"NVIDIA A100 datasheet (SXM4 40 GB: 1,555 GB/s, 19.5 TFLOPS FP32)"+carried),
			"a100-80gb": p("NVIDIA A100 80 GB HBM2e", 80<<30, 2039, 19500, "pcie4",
				"NVIDIA A100 datasheet (SXM4 80 GB: 2,039 GB/s, 19.5 TFLOPS FP32)"+carried),
			"h100": p("NVIDIA H100 SXM5 80 GB HBM3", 80<<30, 3350, 67000, "pcie5",
				"NVIDIA H100 datasheet (SXM5: 3.35 TB/s, 67 TFLOPS FP32)"+carried),
			"h100-pcie": p("NVIDIA H100 PCIe 80 GB HBM2e", 80<<30, 2000, 51000, "pcie5",
				"NVIDIA H100 datasheet (PCIe: 2 TB/s, 51 TFLOPS FP32)"+carried),
			"t4": t4(p),
		}}
}

// RecPipe's GPU (Gupta et al., MICRO'21, Table 2): an NVIDIA T4 at the
// figures the paper prints, which differ from the datasheet's (16 GB
// GDDR6 at 320 GB/s, 8.1 TFLOPS FP32 at the 1,590 MHz boost clock).
const (
	// T4MHz is Table 2's clock, as printed: the T4's base clock.
	T4MHz = 585
	// T4Cores is Table 2's CUDA core count.
	T4Cores = 2560
	// T4GBps is Table 2's memory bandwidth (datasheet: 320 GB/s).
	T4GBps = 300
	// T4Bytes is Table 2's memory (datasheet: 16 GB, of which ≈15 GB usable).
	T4Bytes = 15e9
)

// t4 is RecPipe's T4 at Table 2's figures, GFLOPS derived from them
// (2560 cores × 2 FLOP per FMA × 585 MHz = 2,995 GFLOPS), on PCIe gen3
// x16 (T4 datasheet). One server: the GPU batches queries itself.
func t4(p func(string, int64, float64, float64, string, string) costmodel.Params) costmodel.Params {
	return p("NVIDIA T4 (RecPipe Table 2: 585 MHz, 2560 cores, 15 GB, 300 GB/s)", T4Bytes, T4GBps,
		T4Cores*2*T4MHz/1e3, "pcie3",
		"RecPipe (MICRO'21) Table 2 (585 MHz as printed, 2560 cores, 15 GB, 300 GB/s, 70 W); GFLOPS derived 2560 × 2 × 0.585 GHz; "+
			"NVIDIA T4 datasheet: PCIe gen3 x16 (its 320 GB/s, 16 GB and 8.1 TFLOPS at 1,590 MHz boost are not used)"+carried)
}

// DefaultProfile is the key of the default profile: ScratchPipe's V100.
const DefaultProfile = "v100"

// New returns the device: costmodel over Spec.
func New() device.Device { return costmodel.New(Spec()) }
