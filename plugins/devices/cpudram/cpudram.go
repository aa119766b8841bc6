// Package cpudram is the "cpu-dram" device: host DRAM and CPU, priced by
// the shared cost model in sdk/device/costmodel. Its default
// profile is the host of ScratchPipe's and Tensor Casting's evaluations, an
// Intel Xeon E5-2698 v4 with 256 GB of DDR4 at 76.8 GB/s, with efficiency
// factors calibrated on ScratchPipe's no-cache baseline (docs/devices.md).
// Every time it returns is modeled time on that host, not a measurement.
package cpudram

import (
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/costmodel"
)

// Name is the device's plugin name (builtin:cpu-dram).
const Name = "cpu-dram"

// The efficiency factors fitted on ScratchPipe's no-cache baseline at the
// paper's configuration (docs/devices.md, "Calibration") and held fixed
// for every other graph.
const (
	// Efficiency is the sustained share of peak DRAM bandwidth of the
	// host's row gathers and copies (gather-reduce, collect's gather,
	// insert's write-back): the baseline's forward pass, ≈1/6 of its
	// embedding time (152 ms: the 175 ms iteration less 8 ms of GPU and
	// PCIe and the 15 ms training-step overhead), over the bytes it reads.
	Efficiency = 0.0876
	// ScatterEfficiency is the share the embedding backward ("scatter":
	// gradient expand, coalesce, update) sustains over the bytes flowrun's
	// fused kernel counts: the baseline's backward, ≈5/6 of its embedding
	// time. It is lower than Efficiency because the baseline materialises
	// and sorts the expanded gradients (Tensor Casting Sec. III-B: ≈3× the
	// traffic of gather-reduce, plus the sort), which the fused kernel
	// does not count.
	ScatterEfficiency = 0.0356
)

// calibration is the Source note of every profile with the fitted factors.
const calibration = "; efficiency and op_efficiency.scatter calibrated on ScratchPipe's no-cache baseline (docs/devices.md#calibration)"

// Spec is the device: its name, its description and the named profiles
// of `profile`. The default is ScratchPipe's host; the others are the
// hosts of current GPU servers, with the factors fitted on ScratchPipe's
// host carried over (not calibrated for them).
func Spec() costmodel.Spec {
	calibrated := func(p device.Profile, link string) costmodel.Params {
		p.Efficiency = Efficiency
		return costmodel.Params{Profile: p, Link: link, OpEfficiency: map[string]float64{"scatter": ScatterEfficiency}}
	}
	return costmodel.Spec{Name: Name, Default: DefaultProfile,
		Description: "host DRAM and CPU cost model (default: Xeon E5-2698 v4, 76.8 GB/s, calibrated); all times are modeled",
		Profiles: map[string]costmodel.Params{
			// ScratchPipe Sec. V: "Intel Xeon E5-2698v4 (256 GB DDR4, 76.8
			// GB/sec DRAM bandwidth)", "PCIe(gen3) with 16 GB/sec". GFLOPS is
			// derived, not quoted: 20 cores × 2.2 GHz base × 32 FP32
			// FLOP/cycle (two 8-wide AVX2 FMA units).
			"xeon-e5-2698v4": calibrated(device.Profile{
				Name:          "Intel Xeon E5-2698 v4, 256 GiB DDR4-2400 (ScratchPipe host)",
				CapacityBytes: 256 << 30, BandwidthGBps: 76.8, GFLOPS: 1408,
				Source: "ScratchPipe (MICRO'22) Sec. V / Intel ARK" + calibration,
			}, "pcie3"),
			// One socket of an NVIDIA DGX A100: 8 channels of DDR4-3200
			// (204.8 GB/s), 64 cores × 2.25 GHz × 32 FP32 FLOP/cycle (Zen 2:
			// two 256-bit FMA units), half of the DGX's 1 TB.
			"epyc-7742": calibrated(device.Profile{
				Name:          "AMD EPYC 7742, 512 GiB DDR4-3200 (one socket of a DGX A100)",
				CapacityBytes: 512 << 30, BandwidthGBps: 204.8, GFLOPS: 4608,
				Source: "AMD EPYC 7742 specifications (8 × DDR4-3200), NVIDIA DGX A100 datasheet" + calibration + ", carried over from the Xeon E5-2698 v4",
			}, "pcie4"),
			// One socket of an NVIDIA DGX H100: 8 channels of DDR5-4800
			// (307.2 GB/s), 56 cores × 2.0 GHz × 64 FP32 FLOP/cycle (two
			// AVX-512 FMA units), half of the DGX's 2 TB.
			"xeon-8480": calibrated(device.Profile{
				Name:          "Intel Xeon Platinum 8480C, 1 TiB DDR5-4800 (one socket of a DGX H100)",
				CapacityBytes: 1 << 40, BandwidthGBps: 307.2, GFLOPS: 7168,
				Source: "Intel ARK Xeon Platinum 8480+ (8 × DDR5-4800), NVIDIA DGX H100 datasheet" + calibration + ", carried over from the Xeon E5-2698 v4",
			}, "pcie5"),
			"cascade-lake": cascadeLake(calibrated),
		}}
}

// Table 2 of RecPipe (Gupta et al., MICRO'21): the Cascade Lake CPU
// server of its commodity-hardware experiments, which runs "multiple
// processes ... each core has a single PyTorch/MKL thread" (Sec. 4).
const (
	// CascadeLakeCores is Table 2's core count: the server's parallelism,
	// one query per core (Profile.Servers).
	CascadeLakeCores = 64
	// CascadeLakeGBps is Table 2's DDR bandwidth, shared by every core.
	CascadeLakeGBps = 75.0
	// CascadeLakeGHz is Table 2's clock.
	CascadeLakeGHz = 2.8
	// CascadeLakeFLOPPerCycle is one core's FP32 peak per cycle: two
	// AVX-512 FMA units × 16 lanes × 2 (Table 2: "AVX-512"; Intel's
	// optimization manual for the two-FMA Xeon Gold/Platinum parts).
	CascadeLakeFLOPPerCycle = 64
)

// cascadeLake is RecPipe's CPU as one of its 64 servers: a profile with
// servers > 1 prices one query on one server, so its bandwidth is one
// core's fair share of the socket's 75 GB/s under full load and its GFLOPS
// one core's peak; capacity is the whole server's (shared). Its
// efficiency is its own (CascadeLakeEfficiency, fitted on the paper's one
// absolute CPU time); the scatter factor, which inference never uses, is
// ScratchPipe's.
func cascadeLake(calibrated func(device.Profile, string) costmodel.Params) costmodel.Params {
	p := calibrated(device.Profile{
		Name:          "Intel Cascade Lake, one of 64 cores (RecPipe Table 2 CPU server, 384 GB, 75 GB/s shared)",
		CapacityBytes: 384e9,
		BandwidthGBps: CascadeLakeGBps / CascadeLakeCores,
		GFLOPS:        CascadeLakeGHz * CascadeLakeFLOPPerCycle,
		Servers:       CascadeLakeCores,
		Source: "RecPipe (MICRO'21) Table 2 (2.8 GHz, 64 cores, AVX-512, 384 GB, 75 GB/s) and Sec. 4 (one single-threaded process per core); " +
			"per server: bandwidth 75/64 GB/s (fair share under full load, flowrun's reading), GFLOPS derived 2.8 GHz × 64 FP32 FLOP/cycle (two AVX-512 FMA units); " +
			"efficiency calibrated on RecPipe's CPU two-stage design ranking 3200 items at a 25 ms p99 at 70 QPS (Sec. 5.2, Fig. 8; docs/devices.md#calibration-of-cascade-lake), op_efficiency.scatter ScratchPipe's",
	}, "pcie3")
	p.Profile.Efficiency = CascadeLakeEfficiency
	return p
}

// CascadeLakeEfficiency is the sustained share of a core's bandwidth and
// FLOPS in RecPipe's CPU serving (PyTorch/MKL, one thread a core), the
// one figure fitted for cascade-lake: the paper's only absolute CPU time
// is that its two-stage CPU design meets a 25 ms p99 at 70 QPS ranking
// 3200 items a query (Sec. 5.2, Fig. 8 bottom). flowrun's
// graphs/recpipe-2stage.yaml on 3200-item queries (RMsmall on 3200 → 256
// → RMlarge), 64 servers, 70 QPS, has that p99 at 0.188 (25.01 ms; 0.187
// gives 25.14). Everything else from this profile is a prediction.
const CascadeLakeEfficiency = 0.188

// DefaultProfile is the key of the default profile: ScratchPipe's host.
const DefaultProfile = "xeon-e5-2698v4"

// New returns the device: costmodel over Spec.
func New() device.Device { return costmodel.New(Spec()) }
