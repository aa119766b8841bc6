package rpaccel

import (
	"fmt"
	"strings"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// fields documents Config for Info, with the default profile's values.
func fields() []plugin.Field {
	c, _ := defaults(DefaultProfile)
	v := fmt.Sprint
	return []plugin.Field{
		{Name: "profile", Type: "string", Default: DefaultProfile, Description: "rpaccel (Table 3 with RPAccel's mechanisms) or centaur (the paper's baseline: arrays [1], 16 MB static cache, no look-ahead, topk host)"},
		{Name: "arrays", Type: "list of int", Default: "[8, 8]", Description: "sub-arrays of each stage, frontend first: RPAccel(8,2) is [8, 2]; [1] a monolithic single-stage array"},
		{Name: "shares", Type: "list of float", Default: "equal", Description: "each stage's fraction of the MACs and of the static cache (Sec. 6.2: equal at Criteo's 1/8 filtering)"},
		{Name: "stage", Type: "int", Default: "0", Description: "the stage (index into arrays) this device prices; one device per stage"},
		{Name: "clock_mhz", Type: "float", Default: v(c.ClockMHz), Description: "clock (Table 3)"},
		{Name: "macs", Type: "int", Default: v(c.MACs), Description: "MAC units in all, 128×128 (Table 3)"},
		{Name: "sram_bytes", Type: "int", Default: v(c.SRAMBytes), Description: "systolic array (weight) SRAM, 8 MB (Table 3); weights beyond the stage's share stream from DRAM"},
		{Name: "static_bytes", Type: "int", Default: v(c.StaticBytes), Description: "static hot-embedding cache of all stages, 12 MB (Sec. 6.2)"},
		{Name: "lookahead_bytes", Type: "int", Default: v(c.LookaheadBytes), Description: "look-ahead embedding cache per query in flight, 4 MB (Sec. 6.2)"},
		{Name: "line_bytes", Type: "int", Default: v(c.LineBytes), Description: "cache line, 128 B (Sec. 6.2); the caches deliver one line per cycle"},
		{Name: "prefetch", Type: "bool", Default: "stage > 0", Description: "the look-ahead cache holds the query's rows before the stage runs (backend prefetch, Sec. 6.2)"},
		{Name: "dram_bytes", Type: "int", Default: v(c.DRAMBytes), Description: "DRAM, 16 GB (Table 3)"},
		{Name: "dram_gbps", Type: "float", Default: v(c.DRAMGBps), Description: "DRAM bandwidth, 64 GB/s (Table 3)"},
		{Name: "dram_latency_cycles", Type: "float", Default: v(c.DRAMLatencyCycles), Description: "DRAM latency, 100 cycles (Table 3)"},
		{Name: "gather_efficiency", Type: "float", Default: v(c.GatherEfficiency), Description: "share of dram_gbps the embedding gather's random vector reads sustain; fitted on the baseline (docs/devices.md#rpaccel-recpipes-accelerator-and-its-centaur-like-baseline)"},
		{Name: "weight_bytes", Type: "int", Default: v(c.WeightBytes), Description: "bytes per weight (fp32, as the 128-B line = RMlarge's 32 fp32 values)"},
		{Name: "topk", Type: "string", Default: c.TopK, Description: "unit (on-chip bucketed filter, Sec. 6.2) or host (the baseline: scores over PCIe, host filters)"},
		{Name: "topk_drain_cycles", Type: "float", Default: v(c.TopKDrainCycles), Description: "the unit's drain, \"a couple hundred accelerator cycles\" (Sec. 6.2)"},
		{Name: "host_ghz", Type: "float", Default: v(c.HostGHz), Description: "host clock for host top-k, one comparison per cycle (Table 2 CPU)"},
		{Name: "link", Type: "string", Default: c.Link, Description: "host link: pcie3, pcie4, pcie5 (costmodel links)"},
		{Name: "link_latency_us", Type: "float", Default: v(c.LinkLatencyUs), Description: "fixed cost per PCIe transfer (the paper measured but does not quote it)"},
		{Name: "on_chip_ops", Type: "list of string", Default: strings.Join(c.OnChipOps, ", "), Description: "Transfer ops that stay on chip (the score stage's pooled-to-device when it gathers on this device)"},
		{Name: "profile_batches", Type: "int", Default: v(c.ProfileBatches), Description: "requests with keys whose frequencies provision the static cache"},
		{Name: "vector_dim", Type: "int", Default: "0", Description: "embedding dim of the stage's model when it is not the run's tables' (a frontend's named model, RMsmall's 4); 0: the run's"},
		{Name: "charge_prefetch", Type: "bool", Default: "false", Description: "a gather also costs the DRAM time of the rows the look-ahead cache prefetched for it (a device standing for the gather unit of a later stage)"},
		{Name: "utilization", Type: "float", Default: "0.3 monolithic, 0.6 split", Description: "MAC utilization of a Compute op with FLOPs only, no layers (Sec. 6.2, Fig. 10a)"},
	}
}
