package stage

import (
	"context"
	"fmt"

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
	each, err := ChargeEach(ctx, b, name, d, ops...)
	var sum int64
	for _, ns := range each {
		sum += ns
	}
	return sum, err
}

// ChargeEach is Charge returning each op's modeled time, in ops' order.
func ChargeEach(ctx context.Context, b *batch.Batch, name string, d device.Device, ops ...device.Op) ([]int64, error) {
	if d == nil || len(ops) == 0 {
		return nil, nil
	}
	res, err := d.Cost(ctx, &device.CostRequest{Seq: b.Seq, Ops: ops})
	if err != nil {
		return nil, fmt.Errorf("device cost: %w", err)
	}
	if len(res.ModeledNs) != len(ops) {
		return nil, fmt.Errorf("device cost: %d figures for %d operations", len(res.ModeledNs), len(ops))
	}
	var sum int64
	for _, ns := range res.ModeledNs {
		sum += ns
	}
	stat := DeviceStat(name)
	b.SetStat(stat, b.Stats[stat]+sum)
	return res.ModeledNs, nil
}
