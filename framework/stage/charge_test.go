package stage_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
)

// Charge asks the device once per call for all its ops, returns their sum
// and adds it to the batch's per-device stat, which the modeled clock
// holds the device for.
func TestCharge(t *testing.T) {
	ctx := context.Background()
	var calls []*device.CostRequest
	gpu := &devicetest.Mock{CostF: func(_ context.Context, req *device.CostRequest) (*device.CostResult, error) {
		calls = append(calls, req)
		res := &device.CostResult{}
		for _, op := range req.Ops {
			res.ModeledNs = append(res.ModeledNs, op.Bytes) // 1 ns a byte
		}
		return res, nil
	}}
	b := batch.New(&batch.Header{Seq: 7}, nil)
	ns, err := stage.Charge(ctx, b, "gpu", gpu, device.Op{Name: "a", Bytes: 10}, device.Op{Name: "b", Bytes: 5})
	if err != nil || ns != 15 {
		t.Fatalf("Charge = %d, %v; want 15", ns, err)
	}
	each, err := stage.ChargeEach(ctx, b, "gpu", gpu, device.Op{Name: "c", Bytes: 3}, device.Op{Name: "d", Bytes: 4})
	if err != nil || !slices.Equal(each, []int64{3, 4}) {
		t.Fatalf("ChargeEach = %v, %v; want [3 4]", each, err)
	}
	if len(calls) != 2 || calls[0].Seq != 7 || len(calls[0].Ops) != 2 {
		t.Errorf("device asked %d times (%+v), want once per call with the batch's sequence and every op", len(calls), calls)
	}
	if got := b.Stats[stage.DeviceStat("gpu")]; got != 22 {
		t.Errorf("%s = %d, want the 22 ns charged over both calls", stage.DeviceStat("gpu"), got)
	}
	// Ops at the same time (the two directions of a link): the longest.
	both := batch.New(&batch.Header{Seq: 8}, nil)
	ns, err = stage.ChargeConcurrent(ctx, both, "gpu", gpu, device.Op{Name: "in", Bytes: 6}, device.Op{Name: "out", Bytes: 9})
	if err != nil || ns != 9 {
		t.Fatalf("ChargeConcurrent = %d, %v; want 9", ns, err)
	}
	if got := both.Stats[stage.DeviceStat("gpu")]; got != 9 {
		t.Errorf("%s = %d, want the longest concurrent op's 9", stage.DeviceStat("gpu"), got)
	}
	if len(calls) != 3 || calls[2].Seq != 8 || len(calls[2].Ops) != 2 {
		t.Errorf("device asked %d times (%+v), want once more, with batch 8's sequence and both ops", len(calls), calls)
	}
	if stage.DeviceStat("gpu") != "modeled_dev_gpu_ns" {
		t.Errorf("DeviceStat(gpu) = %q", stage.DeviceStat("gpu"))
	}

	// A stage that names no device, or charges no op, costs nothing and
	// asks nobody.
	if ns, err := stage.Charge(ctx, b, "host", nil, device.Op{Bytes: 1}); ns != 0 || err != nil {
		t.Errorf("nil device: %d, %v", ns, err)
	}
	if ns, err := stage.Charge(ctx, b, "gpu", gpu); ns != 0 || err != nil || len(calls) != 3 {
		t.Errorf("no ops: %d, %v after %d calls", ns, err, len(calls))
	}
	if _, ok := b.Stats[stage.DeviceStat("host")]; ok {
		t.Error("a nil device set a stat")
	}

	// A device that fails, or answers for the wrong number of ops, charges
	// nothing.
	errDown := errors.New("down")
	bad := &devicetest.Mock{CostF: func(context.Context, *device.CostRequest) (*device.CostResult, error) { return nil, errDown }}
	if _, err := stage.Charge(ctx, b, "gpu", bad, device.Op{Bytes: 1}); !errors.Is(err, errDown) {
		t.Errorf("failing device: %v", err)
	}
	short := &devicetest.Mock{CostF: func(context.Context, *device.CostRequest) (*device.CostResult, error) {
		return &device.CostResult{ModeledNs: []int64{1}}, nil
	}}
	if _, err := stage.Charge(ctx, b, "gpu", short, device.Op{Bytes: 1}, device.Op{Bytes: 2}); err == nil {
		t.Error("one figure for two ops: no error")
	}
	if got := b.Stats[stage.DeviceStat("gpu")]; got != 22 {
		t.Errorf("failed charges changed %s to %d", stage.DeviceStat("gpu"), got)
	}
}

// Settings.Device resolves a stage option's device name: nil for none, the
// graph's device by name, and an error naming the option for a name the
// graph lacks.
func TestSettingsDevice(t *testing.T) {
	gpu := &devicetest.Mock{}
	set := stage.Settings{Plugins: stage.Plugins{Devices: map[string]device.Device{"gpu": gpu}}}
	if d, err := set.Device("host_device", ""); d != nil || err != nil {
		t.Errorf("no name: %v, %v; want nil, nil", d, err)
	}
	if d, err := set.Device("compute_device", "gpu"); d != gpu || err != nil {
		t.Errorf("gpu: %v, %v; want the graph's gpu", d, err)
	}
	if _, err := set.Device("compute_device", "tpu"); err == nil || err.Error() != `compute_device "tpu" is not a device of the graph` {
		t.Errorf("tpu: %v", err)
	}
}
