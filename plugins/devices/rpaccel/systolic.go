package rpaccel

import "github.com/flowrun/flowrun/sdk/device"

// The layer-latency model below is flowrun's own: the paper measured its
// MLP latencies on RTL (Sec. 4: "cycle-accurate performance measurements,
// including overheads from loading weights and activations from DRAM") and
// publishes no formula. Its inputs are the layer's shape (from the caller,
// device.Op.Layers), the sub-array's shape (Config.subArray: Table 3's
// 128×128 MACs split as Sec. 7.1 names), the clock (Table 3: 250 MHz) and
// DRAM bandwidth (Table 3: 64 GB/s).

// LayerCycles is the number of cycles a weight-stationary R×C systolic
// array takes for one layer, an M×K activation matrix times a K×N weight
// matrix: the weights are cut into ⌈K/R⌉·⌈N/C⌉ tiles of R×C; each tile is
// loaded and then M activation rows stream through it, one per cycle, the
// first result leaving after the pipeline fills across R rows and C
// columns and the last after it drains:
//
//	cycles = ⌈K/R⌉ · ⌈N/C⌉ · (M + R + C)
//
// (the R term also covers shifting the tile's R weight rows in). Partial
// sums of the K tiles accumulate beside the array at no extra cycle.
func LayerCycles(l device.Layer, rows, cols int) int64 {
	if l.M <= 0 || l.K <= 0 || l.N <= 0 {
		return 0
	}
	r, c := int64(rows), int64(cols)
	return ceilDiv(l.K, r) * ceilDiv(l.N, c) * (l.M + r + c)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// layersNs is the modeled time of a Compute op given as layers on one of
// the stage's sub-arrays: their cycles at the clock, plus, when the layers'
// weights do not fit in the stage's share of the weight SRAM (Table 3:
// 8 MB), streaming every weight in from DRAM at its bandwidth (the paper's
// "loading weights ... from DRAM"; weights that fit stay resident across
// queries, and the R term above covers moving them from SRAM to the array).
func (m *model) layersNs(layers []device.Layer) float64 {
	var cycles, weights int64
	for _, l := range layers {
		cycles += LayerCycles(l, m.rows, m.cols)
		weights += l.K * l.N * m.cfg.WeightBytes
	}
	ns := float64(cycles) * m.cycleNs
	if float64(weights) > float64(m.cfg.SRAMBytes)*m.cfg.share() {
		ns += float64(weights) / m.cfg.DRAMGBps
	}
	return ns
}

// flopsNs prices a Compute op that gives only FLOPs (an older caller): at
// the sub-array's peak (2 FLOPs per MAC per cycle) times a utilization,
// by default the paper's measured average (Sec. 6.2, Fig. 10a: "the fixed,
// monolithic array has an average utilization of only 30% ... Splitting
// the monolithic array into smaller units improves utilization to 60%").
func (m *model) flopsNs(flops int64) float64 {
	u := m.cfg.Utilization
	if u == 0 {
		u = 0.6
		if len(m.cfg.Arrays) == 1 && m.cfg.Arrays[0] == 1 {
			u = 0.3
		}
	}
	return float64(flops) / (2 * float64(m.rows*m.cols) * u) * m.cycleNs
}
