package nmpdimm_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/flowrun/flowrun/plugins/devices/nmpdimm"
	"github.com/flowrun/flowrun/plugins/internal/buildtest"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

func TestConformance(t *testing.T) {
	devicetest.Run(t, func() device.Device { return nmpdimm.New() })
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/devices/nmpdimm/cmd/flowrun-device-nmp-dimm")
	devicetest.RunBinary(t, bin)
}

// Table I: 32 ranks × 25.6 GB/s = 819.2 GB/s, sustaining ~600 GB/s; the
// link to the GPU is 25 GB/s.
func TestTableI(t *testing.T) {
	ctx := context.Background()
	d := nmpdimm.New()
	if err := d.Configure(ctx, plugin.Setup{Options: json.RawMessage(``)}); err != nil {
		t.Fatal(err)
	}
	p, err := d.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.BandwidthGBps != 819.2 || p.LinkGBps != 25 || math.Abs(p.BandwidthGBps*p.Efficiency-600) > 1e-9 {
		t.Fatalf("profile %+v", p)
	}
	// 600 MB read at 600 GB/s: 1 ms; 25 MB over the link: 1 ms.
	res, err := d.Cost(ctx, &device.CostRequest{Ops: []device.Op{
		{Name: "gather-reduce", Kind: device.Read, Bytes: 600e6},
		{Name: "pooled-to-device", Kind: device.Transfer, Bytes: 25e6},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, ns := range res.ModeledNs {
		if math.Abs(float64(ns)-1e6) > 1e6*0.01 {
			t.Errorf("op %d: %d ns, want ≈1 ms", i, ns)
		}
	}
}
