package stage

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/sdk/device"
)

// Charge asks a device, in one call, for the modeled time of a batch's
// operations on it and returns their sum (they run one after another on
// that device). A nil device (the stage names none) costs nothing. The
// result is modeled time and must be reported as such.
func Charge(ctx context.Context, seq uint64, d device.Device, ops ...device.Op) (int64, error) {
	if d == nil || len(ops) == 0 {
		return 0, nil
	}
	res, err := d.Cost(ctx, &device.CostRequest{Seq: seq, Ops: ops})
	if err != nil {
		return 0, fmt.Errorf("device cost: %w", err)
	}
	var sum int64
	for _, ns := range res.ModeledNs {
		sum += ns
	}
	return sum, nil
}
