package costmodel

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// opaque hides a Device's CostModel: a device whose Cost is its own.
type opaque struct {
	device.Device
	costs int
}

func (o *opaque) Cost(ctx context.Context, req *device.CostRequest) (*device.CostResult, error) {
	o.costs++
	return o.Device.Cost(ctx, req)
}

// TestLocalEqualsDevice: a host evaluating the handed-over model (every
// profile, with per-op efficiencies, overheads and a link, after options
// over it) gives the device's own nanoseconds for random ops, and a device
// that hands over no model is asked every time.
func TestLocalEqualsDevice(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"gather", "scatter", "train-step", "h2d"}
	for _, opts := range []string{``, `{"profile":"linked"}`, `{"profile":"linked","efficiency":0.3,"op_overhead_ms":{"train-step":0.125}}`} {
		setup := plugin.Setup{Options: json.RawMessage(opts)}
		dev := New(testSpec())
		local := NewLocal(New(testSpec()))
		hidden := &opaque{Device: New(testSpec())}
		other := NewLocal(hidden)
		for _, d := range []device.Device{dev, local, other} {
			if err := d.Configure(ctx, setup); err != nil {
				t.Fatalf("%s: %v", opts, err)
			}
		}
		if !local.Evaluates() || other.Evaluates() {
			t.Fatalf("%s: Evaluates %v and %v, want true for the model's device, false for an opaque one", opts, local.Evaluates(), other.Evaluates())
		}
		for batch := range 50 {
			req := &device.CostRequest{Seq: uint64(batch)}
			for range 8 {
				req.Ops = append(req.Ops, device.Op{Name: names[rng.IntN(len(names))], Kind: device.OpKind(rng.IntN(4)),
					Bytes: rng.Int64N(1 << 30), FLOPs: rng.Int64N(1 << 40)})
			}
			want, err := dev.Cost(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []device.Device{local, other} {
				got, err := d.Cost(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.ModeledNs, want.ModeledNs) {
					t.Fatalf("%s batch %d: %v, device says %v", opts, batch, got.ModeledNs, want.ModeledNs)
				}
			}
		}
		if hidden.costs != 50 {
			t.Errorf("%s: the opaque device was asked %d times, want every batch (50)", opts, hidden.costs)
		}
	}
}
