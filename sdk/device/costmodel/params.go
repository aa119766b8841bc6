package costmodel

import (
	"maps"
	"slices"
	"strings"

	"github.com/flowrun/flowrun/sdk/device"
)

// Params is a device's whole cost model: the Profile the SDK reports, plus
// the efficiency factors it has no field for. Profile.Efficiency is the
// memory efficiency (Read, Write) and the default for the others.
type Params struct {
	device.Profile
	// Link names the link into the device, a key of Links; "" keeps
	// Profile.LinkGBps and LinkEfficiency as they are.
	Link string
	// LinkEfficiency scales LinkGBps for Transfer (0: Efficiency).
	LinkEfficiency float64
	// ComputeEfficiency scales GFLOPS for Compute (0: Efficiency).
	ComputeEfficiency float64
	// OpEfficiency replaces the kind's efficiency for the ops of these
	// names (device.Op.Name): an operation whose sustained rate differs
	// from its kind's, e.g. the host's "scatter", whose counted bytes
	// leave out the expanded gradients a baseline framework moves.
	OpEfficiency map[string]float64
	// OpOverheadMs adds a fixed modeled time, in ms, to every op of these
	// names, beside its bytes or FLOPs: a per-call cost of the software
	// that issues it, e.g. the training framework's per-step dispatch and
	// synchronisation ("train-step"), which no bandwidth or arithmetic
	// figure contains. Calibrated, like the efficiencies.
	OpOverheadMs map[string]float64
}

// Link is a named host↔device interconnect.
type Link struct {
	// Name is what the profile's name says after the part's, e.g. "PCIe
	// gen3 x16".
	Name string
	// GBps is the raw bandwidth per direction, GB/s (1e9 bytes).
	GBps float64
	// Efficiency is the share of GBps a bulk DMA sustains.
	Efficiency float64
	// Source cites GBps and Efficiency.
	Source string
}

// pcieDMAEfficiency is the share of a PCIe x16 link's raw per-direction
// rate that pinned-memory DMA sustains: 128b/130b encoding (0.985) and TLP
// and DLLP overhead at 256-byte payloads (≈0.86 of what remains) leave
// ≈12.5 of gen3's 16 GB/s, what CUDA's bandwidthTest typically reports on
// gen3 x16 hosts; gen4 and gen5 keep the encoding and the packet format.
const pcieDMAEfficiency = 0.78

// Links are the links a profile's `link` option selects.
var Links = map[string]Link{
	"pcie3": {Name: "PCIe gen3 x16", GBps: 16, Efficiency: pcieDMAEfficiency,
		Source: "PCIe gen3 x16: 16 GB/s per direction (ScratchPipe Sec. V: \"PCIe(gen3) with 16 GB/sec\"; 8 GT/s × 16 lanes); 0.78 sustained: 128b/130b and TLP overhead, pinned-memory DMA ≈12.5 GB/s"},
	"pcie4": {Name: "PCIe gen4 x16", GBps: 32, Efficiency: pcieDMAEfficiency,
		Source: "PCIe gen4 x16: 32 GB/s per direction (16 GT/s × 16 lanes; NVIDIA A100 datasheet: 64 GB/s both ways); 0.78 sustained as gen3 (same encoding and packets)"},
	"pcie5": {Name: "PCIe gen5 x16", GBps: 64, Efficiency: pcieDMAEfficiency,
		Source: "PCIe gen5 x16: 64 GB/s per direction (32 GT/s × 16 lanes; NVIDIA H100 datasheet: 128 GB/s both ways); 0.78 sustained as gen3 (same encoding and packets)"},
}

// LinkNames lists the keys of Links in order.
func LinkNames() []string { return slices.Sorted(maps.Keys(Links)) }

// withLink sets p's link to Links[key]: rate, efficiency, and the link's
// name and source after the part's.
func (p Params) withLink(key string) Params {
	l := Links[key]
	p.Link = key
	p.LinkGBps, p.LinkEfficiency = l.GBps, l.Efficiency
	p.Name += ", " + l.Name
	p.Source += "; link: " + l.Source
	return p
}

// peak is p at its datasheet figures: every efficiency factor 1.
func (p Params) peak() Params {
	p.Efficiency, p.LinkEfficiency, p.ComputeEfficiency = 1, 1, 1
	p.OpEfficiency, p.OpOverheadMs = nil, nil
	p.Source += "; peak figures (every efficiency 1, no op overhead)"
	return p
}

// clone gives p its own op maps (OpEfficiency, OpOverheadMs), so that
// options never write into a catalogue entry.
func (p Params) clone() Params {
	p.OpEfficiency = maps.Clone(p.OpEfficiency)
	p.OpOverheadMs = maps.Clone(p.OpOverheadMs)
	return p
}

// efficiency is the sustained fraction of peak for op.
func (p Params) efficiency(op device.Op) float64 {
	if e, ok := p.OpEfficiency[op.Name]; ok {
		return e
	}
	switch {
	case op.Kind == device.Transfer && p.LinkEfficiency > 0:
		return p.LinkEfficiency
	case op.Kind == device.Compute && p.ComputeEfficiency > 0:
		return p.ComputeEfficiency
	}
	return p.Efficiency
}

// describeOps renders an op map (OpEfficiency, OpOverheadMs) for a field
// default, e.g. "{scatter=0.0356}".
func describeOps(m map[string]float64) string {
	if len(m) == 0 {
		return "{}"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+formatFloat(m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
