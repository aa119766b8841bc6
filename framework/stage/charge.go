package stage

import (
	"context"
	"fmt"
	"slices"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/sdk/device"
)

// DeviceStat is the batch stat under which a stage records the modeled time
// it charged to the graph's device NAME: "modeled_dev_NAME_ns". The
// runtime sums it into results.json's per-device busy time and holds the
// device for that long on the modeled clock (clock.StageSpec.Holds), so a
// stage that works on two devices at once (collect: the host gathers the
// missed rows while the GPU gathers the victims) keeps each busy only for
// its own part.
func DeviceStat(name string) string { return "modeled_dev_" + name + "_ns" }

// Charge asks device d, the graph's device name, in one call, for the
// modeled time of a batch's operations on it, adds their sum to b's
// DeviceStat(name) and returns it (they run one after another on that
// device). A nil device (the stage names none) costs nothing. The result
// is modeled time and must be reported as such.
func Charge(ctx context.Context, b *batch.Batch, name string, d device.Device, ops ...device.Op) (int64, error) {
	_, sum, err := charge(ctx, b, name, d, sumOf, ops)
	return sum, err
}

// ChargeEach is Charge returning each op's modeled time, in ops' order.
func ChargeEach(ctx context.Context, b *batch.Batch, name string, d device.Device, ops ...device.Op) ([]int64, error) {
	each, _, err := charge(ctx, b, name, d, sumOf, ops)
	return each, err
}

// ChargeConcurrent is Charge for operations that run at the same time on
// independent parts of the device, the two directions of a full-duplex
// link: the longest sets the time, which it adds to b's DeviceStat(name)
// and returns.
func ChargeConcurrent(ctx context.Context, b *batch.Batch, name string, d device.Device, ops ...device.Op) (int64, error) {
	_, longest, err := charge(ctx, b, name, d, maxOf, ops)
	return longest, err
}

func charge(ctx context.Context, b *batch.Batch, name string, d device.Device, combine func([]int64) int64, ops []device.Op) ([]int64, int64, error) {
	if d == nil || len(ops) == 0 {
		return nil, 0, nil
	}
	each, err := Cost(ctx, b.Seq, d, ops...)
	if err != nil {
		return nil, 0, err
	}
	ns := combine(each)
	stat := DeviceStat(name)
	b.SetStat(stat, b.Stats[stat]+ns)
	return each, ns, nil
}

// Cost asks d the modeled time of each of batch seq's ops, checking that
// it answered one figure per op, without charging any batch: what a
// stage that models what-ifs (shadow) needs beside the run's clock.
func Cost(ctx context.Context, seq uint64, d device.Device, ops ...device.Op) ([]int64, error) {
	res, err := d.Cost(ctx, &device.CostRequest{Seq: seq, Ops: ops})
	if err != nil {
		return nil, fmt.Errorf("device cost: %w", err)
	}
	if len(res.ModeledNs) != len(ops) {
		return nil, fmt.Errorf("device cost: %d figures for %d operations", len(res.ModeledNs), len(ops))
	}
	return res.ModeledNs, nil
}

// Work is one device's share of a batch's work: the graph's device name,
// the device (nil charges nothing) and its operations, one after another.
type Work struct {
	Name   string
	Device device.Device
	Ops    []device.Op
}

// ChargeParallel charges each Work to its device, as Charge does, for
// devices that work on the batch at the same time (collect: the host
// gathers the missed rows while the GPU gathers the victims), and returns
// the longest: the batch's modeled time at the stage.
func ChargeParallel(ctx context.Context, b *batch.Batch, works ...Work) (int64, error) {
	var longest int64
	for _, w := range works {
		ns, err := Charge(ctx, b, w.Name, w.Device, w.Ops...)
		if err != nil {
			return 0, err
		}
		longest = max(longest, ns)
	}
	return longest, nil
}

func sumOf(ns []int64) int64 {
	var sum int64
	for _, n := range ns {
		sum += n
	}
	return sum
}

func maxOf(ns []int64) int64 { return slices.Max(ns) }
