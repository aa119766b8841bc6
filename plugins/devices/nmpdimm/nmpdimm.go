// Package nmpdimm is the "nmp-dimm" device: Tensor Casting's memory-centric
// disaggregated memory pool (Sec. V, Table I), DDR4 ranks each with a
// near-memory processing (NMP) core that gathers, reduces and scatters
// embedding rows inside the DIMMs, so a pooled or casted gather-reduce and
// a scatter run at the ranks' aggregate bandwidth instead of a host's
// pin-limited one. The GPU that runs the dense model reaches it over a
// link (25 GB/s in the paper's emulation). Priced by the shared cost model
// in sdk/device/costmodel; every time it returns is modeled.
package nmpdimm

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/costmodel"
)

// Name is the device's plugin name (builtin:nmp-dimm).
const Name = "nmp-dimm"

// Table I of Tensor Casting: the disaggregated memory node.
const (
	// Ranks is the number of DDR4 ranks, each with its NMP core.
	Ranks = 32
	// RankGBps is a rank's bandwidth, GB/s (DDR4-3200, 64-bit channel).
	RankGBps = 25.6
	// AggregateGBps is Ranks × RankGBps: 819.2 GB/s.
	AggregateGBps = Ranks * RankGBps
	// EffectiveGBps is what the paper's Ramulator model sustains for the
	// NMP gathers and scatters: "over 600 GB/sec of effective throughput
	// over the maximum 819.2 GB/sec" (Sec. V).
	EffectiveGBps = 600.0
	// EmulatedGBps is what the paper's measured figures imply the pool
	// sustained in its emulation (CUDA kernels on a second V100 standing
	// in for the pool, Sec. V): fitted so that the TensorDIMM-like
	// baseline, Baseline(NMP), keeps the pool busy Fig. 15's 6.5 % of its
	// time on RM1/RM2 at batch 2048, with the host calibrated on
	// ScratchPipe (the fit gives 59.9 GB/s). The baseline only: Ours(NMP),
	// the design under test, is a prediction (docs/devices.md).
	EmulatedGBps = 60.0
	// LinkGBps is the NMP-GPU link of the paper's emulation: "We
	// configure the communication bandwidth between NMP-GPU to be 25
	// GB/sec" (Sec. VI).
	LinkGBps = 25.0
	// RankBytes is a rank's capacity: a 128 GB LR-DIMM per rank (Sec. VI,
	// energy).
	RankBytes = 128 << 30
)

// Spec is the device: its name, its description and the named profiles
// of `profile`.
func Spec() costmodel.Spec {
	p := func(ranks int, sustainedGBps float64, how string) costmodel.Params {
		agg := float64(ranks) * RankGBps
		return costmodel.Params{
			Profile: device.Profile{
				Name:          fmt.Sprintf("NMP DDR4 pool, %d ranks × %.1f GB/s", ranks, RankGBps),
				CapacityBytes: int64(ranks) * RankBytes,
				BandwidthGBps: agg,
				LinkGBps:      LinkGBps,
				// The NMP cores only add what they gather; the dense model
				// runs on the GPU. A rank's adder tree is not the bound.
				GFLOPS:     float64(ranks) * 64,
				Efficiency: sustainedGBps / AggregateGBps,
				Source: fmt.Sprintf("Tensor Casting (Kwon et al.) Table I: %d DDR4 ranks × 25.6 GB/s; efficiency %.4f = %.0f of 819.2 GB/s %s; link 25 GB/s NMP-GPU (Sec. VI); 128 GB LR-DIMM per rank",
					ranks, sustainedGBps/AggregateGBps, sustainedGBps, how),
			},
			// The paper configures the link's rate itself: no protocol
			// overhead is taken off it.
			LinkEfficiency: 1,
		}
	}
	const ramulator = "effective (Sec. V, Ramulator)"
	return costmodel.Spec{Name: Name, Default: DefaultProfile,
		Description: "near-memory-processing DDR4 pool (Tensor Casting Table I: 32 ranks × 25.6 GB/s, ~600 GB/s effective, 25 GB/s link to the GPU); all times are modeled",
		Profiles: map[string]costmodel.Params{
			"table1":   p(Ranks, EffectiveGBps, ramulator),
			"16-ranks": p(16, EffectiveGBps, ramulator),
			"64-ranks": p(64, EffectiveGBps, ramulator),
			// Table I's pool at the rate the paper's emulation sustained, the
			// profile the Tensor Casting graphs use to compare with the paper.
			"emulated": p(Ranks, EmulatedGBps, "as the paper's emulation sustained it, fitted on Baseline(NMP)'s utilisation in Fig. 15 (docs/devices.md#nmp-dimm-tensor-castings-near-memory-pool-pluginsdevicesnmpdimm)"),
		}}
}

// DefaultProfile is the key of the default profile: Table I's 32 ranks.
const DefaultProfile = "table1"

// New returns the device: costmodel over Spec.
func New() device.Device { return costmodel.New(Spec()) }
