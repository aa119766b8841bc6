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

// The emulated profile is Table I's pool at the 60 GB/s the paper's
// emulation sustained (fitted, docs/devices.md): the same ranks, link and
// capacity as table1, a tenth of its rate.
func TestEmulatedProfile(t *testing.T) {
	ctx := context.Background()
	profile := func(options string) device.Profile {
		d := nmpdimm.New()
		if err := d.Configure(ctx, plugin.Setup{Options: json.RawMessage(options)}); err != nil {
			t.Fatal(err)
		}
		p, err := d.Profile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	table1, emulated := profile(`{}`), profile(`{"profile": "emulated"}`)
	if math.Abs(emulated.BandwidthGBps*emulated.Efficiency-nmpdimm.EmulatedGBps) > 1e-9 {
		t.Fatalf("emulated sustains %g GB/s, want %g", emulated.BandwidthGBps*emulated.Efficiency, nmpdimm.EmulatedGBps)
	}
	if emulated.BandwidthGBps != table1.BandwidthGBps || emulated.LinkGBps != table1.LinkGBps ||
		emulated.CapacityBytes != table1.CapacityBytes {
		t.Fatalf("emulated %+v differs from table1 %+v beyond its efficiency", emulated, table1)
	}
	if r := table1.Efficiency / emulated.Efficiency; math.Abs(r-10) > 1e-9 {
		t.Fatalf("table1 / emulated = %g, want 10", r)
	}
}
