// Package rpaccel is the "rpaccel" device: RecPipe's recommendation
// accelerator (Gupta et al., MICRO'21, Sec. 3.2, 6, Table 3) and its
// Centaur-like baseline, as a cost model. It owns the accelerator's
// layer-latency model (a weight-stationary systolic array split into
// sub-arrays per stage), its embedding caches (a static hot-row cache and a
// look-ahead cache, simulated over each batch's own keys), its bucketed
// top-k unit, and the PCIe link to the host. flowrun has no such hardware:
// every time it returns is modeled, and the layer formula is flowrun's own
// (the paper measured RTL). It imports only sdk/, never framework/.
package rpaccel

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/costmodel"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Name is the device's plugin name (builtin:rpaccel).
const Name = "rpaccel"

// Version is the plugin's version.
const Version = "0.1.0"

// Names of the filter stage's ops (framework/stages/filter), which the
// top-k unit, or the host on the baseline, prices by name.
const (
	OpReadScores = "read-scores"
	OpTopK       = "top-k"
	OpWriteTopK  = "write-topk"
)

// Device is the rpaccel device plugin.
type Device struct {
	mu sync.Mutex
	m  *model
}

var _ device.Device = (*Device)(nil)

// New returns an unconfigured rpaccel device.
func New() device.Device { return &Device{} }

// model is a configured device: the options and what follows from them.
type model struct {
	cfg        Config
	rows, cols int     // one sub-array of the stage
	cycleNs    float64 // 1 / clock
	latencyNs  float64 // DRAM latency
	linkGBps   float64 // PCIe, sustained
	onChip     map[string]bool
	tables     []plugin.Table
	cache      *embCache
}

// Info describes the device and its options.
func (d *Device) Info(context.Context) (plugin.Info, error) {
	return plugin.NewInfo(plugin.KindDevice, Name, Version,
		"RecPipe's RPAccel (Table 3: 128×128 systolic array at 250 MHz split into sub-arrays per stage, 12 MB static + 4 MB look-ahead embedding cache, bucketed top-k unit) or its Centaur-like baseline; all times are modeled",
		fields()), nil
}

// Configure reads the options over the named profile.
func (d *Device) Configure(_ context.Context, setup plugin.Setup) error {
	cfg, err := decode(setup.Options)
	if err != nil {
		return err
	}
	tables := setup.Tables
	if cfg.VectorDim > 0 {
		tables = make([]plugin.Table, len(setup.Tables))
		for i, t := range setup.Tables {
			tables[i] = plugin.Table{Rows: t.Rows, Dim: cfg.VectorDim}
		}
	}
	m := &model{cfg: cfg, cycleNs: 1e3 / cfg.ClockMHz, tables: tables, onChip: map[string]bool{}}
	m.rows, m.cols = cfg.subArray()
	m.latencyNs = cfg.DRAMLatencyCycles * m.cycleNs
	l := costmodel.Links[cfg.Link]
	m.linkGBps = l.GBps * l.Efficiency
	for _, op := range cfg.OnChipOps {
		m.onChip[op] = true
	}
	prefetch := cfg.Stage > 0
	if cfg.Prefetch != nil {
		prefetch = *cfg.Prefetch
	}
	m.cache = newEmbCache(int64(float64(cfg.StaticBytes)*cfg.share()), cfg.LookaheadBytes, prefetch, cfg.ProfileBatches)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m = m
	return nil
}

func (d *Device) model() (*model, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		return nil, plugin.ErrNotConfigured
	}
	return d.m, nil
}

// Profile reports one server (one sub-array of the stage) of the design:
// its peak arithmetic, Table 3's DRAM, the PCIe link, and as Servers the
// stage's sub-arrays, each serving one query (or sub-batch) at a time.
func (d *Device) Profile(context.Context) (device.Profile, error) {
	m, err := d.model()
	if err != nil {
		return device.Profile{}, err
	}
	c := m.cfg
	return device.Profile{
		Name:          fmt.Sprintf("%s stage %d: %d sub-arrays of %d×%d MACs at %g MHz", c, c.Stage, c.Arrays[c.Stage], m.rows, m.cols, c.ClockMHz),
		CapacityBytes: c.DRAMBytes, BandwidthGBps: c.DRAMGBps, LinkGBps: costmodel.Links[c.Link].GBps,
		LatencyNs: m.latencyNs, GFLOPS: 2 * float64(m.rows*m.cols) * c.ClockMHz / 1e3, Efficiency: 1,
		Servers: int32(c.Arrays[c.Stage]),
		Source: "RecPipe (MICRO'21) Table 3 (250 MHz, 128×128 MACs, 8 MB SRAM, 16 MB embedding cache, 16 GB DRAM at 64 GB/s, 100 cycles), " +
			"Sec. 6.2 (12 MB static + 4 MB look-ahead, 128-B lines, top-k unit), Sec. 7.1 (sub-array counts, Centaur baseline); " +
			"layer latency and sub-array shapes flowrun's own model; gather_efficiency fitted on the baseline's 6 ms p99 at 200 QPS (docs/devices.md#rpaccel-recpipes-accelerator-and-its-centaur-like-baseline); all modeled",
	}, nil
}

// Cost prices each op on one server of the stage, in request order.
func (d *Device) Cost(_ context.Context, req *device.CostRequest) (*device.CostResult, error) {
	m, err := d.model()
	if err != nil {
		return nil, err
	}
	if req == nil {
		return nil, fmt.Errorf("%w: nil cost request", plugin.ErrInvalidRequest)
	}
	res := &device.CostResult{ModeledNs: make([]int64, len(req.Ops))}
	for i, op := range req.Ops {
		ns, err := m.cost(op)
		if err != nil {
			return nil, fmt.Errorf("batch %d: op %d (%q): %w", req.Seq, i, op.Name, err)
		}
		if ns >= math.MaxInt64 {
			return nil, fmt.Errorf("batch %d: op %d (%q): %w: modeled time overflows", req.Seq, i, op.Name, plugin.ErrInvalidRequest)
		}
		res.ModeledNs[i] = int64(math.Ceil(ns))
	}
	return res, nil
}

// cost is one op's modeled time in ns.
func (m *model) cost(op device.Op) (float64, error) {
	if op.Bytes < 0 || op.FLOPs < 0 {
		return 0, fmt.Errorf("%w: negative size (bytes %d, flops %d)", plugin.ErrInvalidRequest, op.Bytes, op.FLOPs)
	}
	if ns, ok := m.topK(op); ok {
		return ns, nil
	}
	switch op.Kind {
	case device.Read:
		if len(op.Keys) > 0 {
			l := m.Lookups(op)
			if m.cfg.ChargePrefetch {
				return m.gatherNs(l) + m.PrefetchNs(l), nil
			}
			return m.gatherNs(l), nil
		}
		// No keys, no hit rate to measure: every byte is a gather miss.
		return m.fetchNs(op.Bytes), nil
	case device.Write:
		return m.dramNs(op.Bytes), nil
	case device.Transfer:
		if m.onChip[op.Name] {
			return 0, nil
		}
		return m.pcieNs(op.Bytes), nil
	case device.Compute:
		if len(op.Layers) > 0 {
			return m.layersNs(op.Layers), nil
		}
		return m.flopsNs(op.FLOPs), nil
	}
	return 0, fmt.Errorf("%w: unknown op kind %d", plugin.ErrInvalidRequest, op.Kind)
}

// dramNs streams bytes to or from DRAM: one access latency, then Table 3's
// bandwidth.
func (m *model) dramNs(bytes int64) float64 {
	if bytes == 0 {
		return 0
	}
	return m.latencyNs + float64(bytes)/m.cfg.DRAMGBps
}

// pcieNs moves bytes over the host link: a fixed per-transfer latency,
// then the link's sustained rate.
func (m *model) pcieNs(bytes int64) float64 {
	if bytes == 0 {
		return 0
	}
	return m.cfg.LinkLatencyUs*1e3 + float64(bytes)/m.linkGBps
}

// topK prices the filter's ops: on RPAccel's bucketed unit (Sec. 6.2,
// Fig. 10b), scores stream from the last layer into the bins one per
// cycle while the MLP runs (no time of their own), the unit drains the
// highest bins' ids in a couple hundred cycles and writes them to DRAM;
// on the baseline the scores cross PCIe, the host filters them (one
// comparison per cycle of its 2.8 GHz clock, the filter's count) and the
// ids cross back.
func (m *model) topK(op device.Op) (float64, bool) {
	unit := m.cfg.TopK == "unit"
	switch {
	case op.Name == OpReadScores && op.Kind == device.Read:
		if unit {
			return 0, true
		}
		return m.pcieNs(op.Bytes), true
	case op.Name == OpTopK && op.Kind == device.Compute:
		if unit {
			return m.cfg.TopKDrainCycles * m.cycleNs, true
		}
		return float64(op.FLOPs) / m.cfg.HostGHz, true
	case op.Name == OpWriteTopK && op.Kind == device.Write:
		if unit {
			return m.dramNs(op.Bytes), true
		}
		return m.pcieNs(op.Bytes), true
	}
	return 0, false
}

// Lookups runs a Read op's keys through the stage's embedding caches.
func (m *model) Lookups(op device.Op) Lookups {
	fallback := op.Bytes / int64(len(op.Keys))
	rowBytes := func(k uint64) int64 {
		if t, _ := device.SplitRowKey(k); t < len(m.tables) && m.tables[t].Dim > 0 {
			return 4 * int64(m.tables[t].Dim)
		}
		return max(fallback, 1)
	}
	return m.cache.simulate(op.Keys, rowBytes)
}

// gatherNs is the embedding gather's time, by the paper's "simple
// latency and bandwidth models for SRAM and DRAM" (Sec. 4): the hits'
// vector bytes from the caches at one 128-B line per cycle, and the
// misses' vector bytes from DRAM after one 100-cycle access latency, at
// 64 GB/s times the gather efficiency (random vector reads sustain a
// fraction of a DRAM's streaming peak; the one figure fitted on the
// baseline):
//
//	hit_bytes / (128 B · 250 MHz) + [misses > 0] · (t_lat + miss_bytes / (64 GB/s · gather_efficiency))
//
// Vectors are moved at their own size (RMsmall's 16 B, RMlarge's 128 B),
// as the paper counts memory accesses (Fig. 1c: 4.0× fewer bytes for
// RMsmall on 4096 then RMlarge on 512 than RMlarge on 4096).
func (m *model) gatherNs(l Lookups) float64 {
	return float64(l.HitBytes)/(float64(m.cfg.LineBytes)*m.cfg.ClockMHz/1e3) + m.fetchNs(l.MissBytes)
}

// fetchNs is the time to bring bytes of vectors from DRAM.
func (m *model) fetchNs(bytes int64) float64 {
	if bytes == 0 {
		return 0
	}
	return m.latencyNs + float64(bytes)/(m.cfg.DRAMGBps*m.cfg.GatherEfficiency)
}

// PrefetchNs is the DRAM time of the rows the look-ahead cache fetched
// ahead of the stage (Lookups.Prefetched): not part of the stage's Cost,
// which finds them on chip, but time the chip's one embedding gather unit
// and DRAM spend while the previous stage runs. A serving model that
// shares that unit between stages charges it there.
func (m *model) PrefetchNs(l Lookups) float64 { return m.fetchNs(l.PrefetchedBytes) }
