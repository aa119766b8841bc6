package devicetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// setup is the Setup the suite configures devices with.
func (c config) setup(testing.TB) plugin.Setup {
	return plugin.Setup{
		RunID: "devicetest", Seed: 1, BatchSize: 128, Lookups: 8, DenseFeatures: 13,
		Tables:  []plugin.Table{{Rows: 1 << 20, Dim: 64}, {Rows: 1000, Dim: 64}},
		Options: c.options,
	}
}

// runContract runs the device's own contract tests (plugintest.Suite runs
// Info and UnknownOption); connect returns a fresh, unconfigured device
// behind real gRPC.
func (c config) runContract(t *testing.T, connect func(*testing.T) device.Device) {
	t.Helper()
	k := &contract{config: c, connect: connect, setup: c.setup(t)}
	t.Run("Profile", k.profile)
	t.Run("Cost", k.deterministic)
	t.Run("MoreWorkNotFaster", k.moreWorkNotFaster)
	t.Run("InvalidRequest", k.invalidRequest)
	t.Run("OptionalFields", k.optionalFields)
}

// contract is one run of the contract: the configuration, the devices'
// source and the Setup they are configured with.
type contract struct {
	config
	connect func(*testing.T) device.Device
	setup   plugin.Setup
}

// configured is a fresh device, configured.
func (k *contract) configured(t *testing.T) device.Device {
	t.Helper()
	return plugintest.Configured(t, k.connect(t), k.setup)
}

// cost is the modeled time of ops on d, checked: one non-negative time per op.
func (k *contract) cost(t *testing.T, d device.Device, ops []device.Op) []int64 {
	t.Helper()
	res, err := d.Cost(context.Background(), &device.CostRequest{Seq: 1, Ops: ops})
	if err != nil {
		t.Fatalf("Cost: %v", err)
	}
	if res == nil || len(res.ModeledNs) != len(ops) {
		t.Fatalf("Cost of %d ops answered %+v, want one modeled time per op", len(ops), res)
	}
	for i, ns := range res.ModeledNs {
		if ns < 0 {
			t.Fatalf("op %d (%+v): modeled %d ns, want ≥ 0", i, ops[i], ns)
		}
	}
	return res.ModeledNs
}

func (k *contract) profile(t *testing.T) {
	p, err := k.configured(t).Profile(context.Background())
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	for _, e := range checkProfile(p) {
		t.Error(e)
	}
}

func (k *contract) deterministic(t *testing.T) {
	d := k.configured(t)
	if got := k.cost(t, d, nil); len(got) != 0 {
		t.Errorf("Cost of no ops: %v", got)
	}
	ops := []device.Op{
		{Name: "gather", Kind: device.Read, Bytes: 1 << 20},
		{Name: "update", Kind: device.Write, Bytes: 1 << 20},
		{Name: "mlp", Kind: device.Compute, FLOPs: 1 << 30},
		{Name: "h2d", Kind: device.Transfer, Bytes: 1 << 20},
		{Name: "empty read", Kind: device.Read},
	}
	first := k.cost(t, d, ops)
	if again := k.cost(t, d, ops); !slices.Equal(first, again) {
		t.Errorf("the same ops cost %v, then %v; a cost model is deterministic", first, again)
	}
}

func (k *contract) moreWorkNotFaster(t *testing.T) {
	d := k.configured(t)
	for _, kind := range []device.OpKind{device.Read, device.Write, device.Transfer, device.Compute} {
		var ops []device.Op
		for size := int64(0); size <= 1<<36; size = max(1, size*16) {
			op := device.Op{Name: fmt.Sprintf("%d", size), Kind: kind}
			if kind == device.Compute {
				op.FLOPs = size
			} else {
				op.Bytes = size
			}
			ops = append(ops, op)
		}
		ns := k.cost(t, d, ops)
		for i := 1; i < len(ns); i++ {
			if ns[i] < ns[i-1] {
				t.Errorf("op kind %d: %s units cost %d ns, fewer (%s) cost %d ns", kind, ops[i].Name, ns[i], ops[i-1].Name, ns[i-1])
			}
		}
		if ns[len(ns)-1] <= ns[0] {
			t.Errorf("op kind %d: 2^36 units cost %d ns, no more than 0 units (%d ns)", kind, ns[len(ns)-1], ns[0])
		}
	}
}

// optionalFields checks that ops carrying the optional Keys and Layers
// (which a device may use or ignore) are priced like any other: one
// non-negative time each, and an empty Keys or Layers refused by none.
func (k *contract) optionalFields(t *testing.T) {
	d := k.configured(t)
	keys := make([]uint64, 64)
	for i := range keys {
		keys[i] = device.RowKey(i%2, int64(i%7))
	}
	k.cost(t, d, []device.Op{
		{Name: "gather-reduce", Kind: device.Read, Bytes: 64 * 256, Keys: keys},
		{Name: "mlp", Kind: device.Compute, FLOPs: 2 * 128 * 13 * 64, Layers: []device.Layer{{M: 128, K: 13, N: 64}}},
		{Name: "gather-reduce", Kind: device.Read, Bytes: 0, Keys: []uint64{}},
	})
}

func (k *contract) invalidRequest(t *testing.T) {
	d := k.configured(t)
	for _, op := range []device.Op{
		{Name: "negative bytes", Kind: device.Read, Bytes: -1},
		{Name: "negative flops", Kind: device.Compute, FLOPs: -1},
		{Name: "unknown kind", Kind: device.OpKind(99), Bytes: 1},
	} {
		_, err := d.Cost(context.Background(), &device.CostRequest{Seq: 1, Ops: []device.Op{{Name: "fine", Kind: device.Read, Bytes: 8}, op}})
		if !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Errorf("%s: err = %v, want plugin.ErrInvalidRequest", op.Name, err)
		}
	}
}

// checkProfile returns what is wrong with a profile.
func checkProfile(p device.Profile) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if p.Name == "" {
		bad("Profile.Name is empty")
	}
	if p.Source == "" {
		bad("Profile.Source is empty; every figure needs a citation")
	}
	if !(p.BandwidthGBps > 0) || !finite(p.BandwidthGBps) {
		bad("Profile.BandwidthGBps = %v, want > 0", p.BandwidthGBps)
	}
	if !(p.Efficiency > 0 && p.Efficiency <= 1) {
		bad("Profile.Efficiency = %v, want in (0, 1]", p.Efficiency)
	}
	for name, v := range map[string]float64{"LinkGBps": p.LinkGBps, "LatencyNs": p.LatencyNs, "GFLOPS": p.GFLOPS} {
		if !(v >= 0) || !finite(v) {
			bad("Profile.%s = %v, want ≥ 0", name, v)
		}
	}
	if p.CapacityBytes < 0 {
		bad("Profile.CapacityBytes = %d, want ≥ 0 (0: unlimited)", p.CapacityBytes)
	}
	return errs
}
