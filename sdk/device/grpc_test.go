package device_test

import (
	"context"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// TestOptionalFieldsCrossGRPC checks that the fields added after the first
// release (Op.Keys, Op.Layers, Profile.Servers) reach the plugin and come
// back intact, and that a request without them arrives without them.
func TestOptionalFieldsCrossGRPC(t *testing.T) {
	var got []*device.CostRequest
	mock := &devicetest.Mock{
		ProfileF: func(context.Context) (device.Profile, error) {
			return device.Profile{Name: "m", BandwidthGBps: 1, Efficiency: 1, Source: "test", Servers: 64}, nil
		},
		CostF: func(_ context.Context, req *device.CostRequest) (*device.CostResult, error) {
			got = append(got, req)
			return &device.CostResult{ModeledNs: make([]int64, len(req.Ops))}, nil
		},
	}
	d := plugintest.InProcess(t, plugin.KindDevice, device.ServerPlugin(mock)).(device.Device)
	p, err := d.Profile(context.Background())
	if err != nil || p.Servers != 64 {
		t.Fatalf("Profile = %+v, %v; want Servers 64", p, err)
	}
	keys := []uint64{device.RowKey(3, 7), device.RowKey(0, 1<<39)}
	layers := []device.Layer{{M: 4096, K: 13, N: 64}, {M: 4096, K: 64, N: 4}}
	ops := []device.Op{
		{Name: "gather-reduce", Kind: device.Read, Bytes: 256, Keys: keys},
		{Name: "mlp", Kind: device.Compute, FLOPs: 1, Layers: layers},
		{Name: "old", Kind: device.Read, Bytes: 8},
	}
	if _, err := d.Cost(context.Background(), &device.CostRequest{Seq: 2, Ops: ops}); err != nil {
		t.Fatal(err)
	}
	in := got[0].Ops
	if !slices.Equal(in[0].Keys, keys) || !slices.Equal(in[1].Layers, layers) {
		t.Errorf("keys %v layers %v arrived as %v, %v", keys, layers, in[0].Keys, in[1].Layers)
	}
	if in[2].Keys != nil || in[2].Layers != nil {
		t.Errorf("an op without keys or layers arrived with %v, %v", in[2].Keys, in[2].Layers)
	}
}

func TestRowKey(t *testing.T) {
	for _, c := range []struct {
		table int
		row   int64
	}{{0, 0}, {25, 10131226}, {1, 1<<40 - 1}} {
		k := device.RowKey(c.table, c.row)
		if table, row := device.SplitRowKey(k); table != c.table || row != c.row {
			t.Errorf("RowKey(%d, %d) splits into (%d, %d)", c.table, c.row, table, row)
		}
	}
	if device.RowKey(1, 0) == device.RowKey(0, 0) {
		t.Error("tables share keys")
	}
	if f := (device.Layer{M: 2, K: 3, N: 5}).FLOPs(); f != 60 {
		t.Errorf("Layer FLOPs = %d, want 60", f)
	}
}
