// Package nmpdimm is the "nmp-dimm" device: Tensor Casting's memory-centric
// disaggregated memory pool (Sec. V, Table I), DDR4 ranks each with a
// near-memory processing (NMP) core that gathers, reduces and scatters
// embedding rows inside the DIMMs, so a pooled or casted gather-reduce and
// a scatter run at the ranks' aggregate bandwidth instead of a host's
// pin-limited one. The GPU that runs the dense model reaches it over a
// link (25 GB/s in the paper's emulation). Priced by the shared cost model
// in plugins/devices/internal/costmodel; every time it returns is modeled.
package nmpdimm

import (
	"fmt"

	"github.com/flowrun/flowrun/plugins/devices/internal/costmodel"
	"github.com/flowrun/flowrun/sdk/device"
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
	// LinkGBps is the NMP-GPU link of the paper's emulation: "We
	// configure the communication bandwidth between NMP-GPU to be 25
	// GB/sec" (Sec. VI).
	LinkGBps = 25.0
	// RankBytes is a rank's capacity: a 128 GB LR-DIMM per rank (Sec. VI,
	// energy).
	RankBytes = 128 << 30
)

// Profiles are the named profiles of `profile`.
func Profiles() map[string]costmodel.Params {
	p := func(ranks int) costmodel.Params {
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
				Efficiency: EffectiveGBps / AggregateGBps,
				Source: fmt.Sprintf("Tensor Casting (Kwon et al.) Table I: %d DDR4 ranks × 25.6 GB/s; efficiency %.3f = 600 of 819.2 GB/s effective (Sec. V, Ramulator); link 25 GB/s NMP-GPU (Sec. VI); 128 GB LR-DIMM per rank",
					ranks, EffectiveGBps/AggregateGBps),
			},
			// The paper configures the link's rate itself: no protocol
			// overhead is taken off it.
			LinkEfficiency: 1,
		}
	}
	return map[string]costmodel.Params{
		"table1":   p(Ranks),
		"16-ranks": p(16),
		"64-ranks": p(64),
	}
}

// DefaultProfile is the key of the default profile: Table I's 32 ranks.
const DefaultProfile = "table1"

// New returns the nmp-dimm device.
func New() device.Device {
	return costmodel.New(costmodel.Spec{
		Name:        Name,
		Description: "near-memory-processing DDR4 pool (Tensor Casting Table I: 32 ranks × 25.6 GB/s, ~600 GB/s effective, 25 GB/s link to the GPU); all times are modeled",
		Profiles:    Profiles(),
		Default:     DefaultProfile,
	})
}
