package engine

import (
	"sort"
	"strings"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/results"
)

// Per-primitive stats a stage may set on a batch, summed per stage into
// results.json's primitives (Tensor Casting's Fig. 12 breakdown and
// Fig. 15 utilisation): prim_NAME_ns (measured wall time of primitive NAME),
// modeled_prim_NAME_ns (its modeled time) and modeled_dev_DEVICE_ns (the
// modeled time the stage charged to DEVICE). Like modeled_ns they are per
// stage: cleared before a stage runs, so they never count twice downstream.
const (
	primWall    = "prim_"
	primModeled = "modeled_prim_"
	primDevice  = "modeled_dev_"
)

func isPrimStat(k string) bool {
	return strings.HasSuffix(k, "_ns") &&
		(strings.HasPrefix(k, primWall) || strings.HasPrefix(k, primModeled) || strings.HasPrefix(k, primDevice))
}

// addPrims sums b's per-primitive stats into the stage's, for results'
// primitives, and keeps by sequence the modeled time b's stage charged to
// each device, for the modeled clock's holds.
func (n *node) addPrims(b *batch.Batch) {
	reported := false
	for k, v := range b.Stats {
		if !isPrimStat(k) {
			continue
		}
		if n.prims == nil {
			n.prims = make(map[string]int64)
		}
		n.prims[k] += v
		reported = true
		if dev, ok := primName(k, primDevice); ok && int(b.Seq) < len(n.modBySeq) {
			if n.devBySeq == nil {
				n.devBySeq = make(map[string][]int64)
			}
			if n.devBySeq[dev] == nil {
				n.devBySeq[dev] = make([]int64, len(n.modBySeq))
			}
			n.devBySeq[dev][b.Seq] = v
		}
	}
	if reported {
		n.primBatches++
	}
}

// primName is NAME of the stat prefixNAME_ns, and whether k is one.
func primName(k, prefix string) (string, bool) {
	name, ok := strings.CutPrefix(k, prefix)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(name, "_ns")
}

// primitives turns the stages' sums into results; makespanNs (the modeled
// clock's, 0 without one) turns device busy time into utilisation.
func (r *run) primitives(makespanNs int64) []results.Primitives {
	var out []results.Primitives
	for _, n := range r.nodes {
		if len(n.prims) == 0 {
			continue
		}
		p := results.Primitives{Stage: n.Name, Batches: n.primBatches,
			WallMs: map[string]float64{}, ModeledMs: map[string]float64{}}
		keys := make([]string, 0, len(n.prims))
		for k := range n.prims {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ms := float64(n.prims[k]) / 1e6
			if name, ok := primName(k, primModeled); ok {
				p.ModeledMs[name] = ms
			} else if dev, ok := primName(k, primDevice); ok {
				if p.DeviceBusyMs == nil {
					p.DeviceBusyMs = map[string]float64{}
				}
				p.DeviceBusyMs[dev] = ms
				if makespanNs > 0 {
					if p.DeviceUtilisation == nil {
						p.DeviceUtilisation = map[string]float64{}
					}
					p.DeviceUtilisation[dev] = float64(n.prims[k]) / float64(makespanNs)
				}
			} else if name, ok := primName(k, primWall); ok {
				p.WallMs[name] = ms
			}
		}
		out = append(out, p)
	}
	return out
}
