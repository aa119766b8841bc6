package hbm

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/plugins/devices/internal/costmodel"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
)

func configured(t *testing.T, opts string) device.Device {
	t.Helper()
	d := New()
	if err := d.Configure(context.Background(), plugin.Setup{Options: json.RawMessage(opts)}); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDefaultProfileIsV100(t *testing.T) {
	ctx := context.Background()
	d := configured(t, ``)
	p, err := d.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "NVIDIA V100 32 GB HBM2, PCIe gen3 x16" || p.BandwidthGBps != 900 || p.LinkGBps != 16 ||
		p.CapacityBytes != 32<<30 || p.GFLOPS != 15700 || p.Efficiency != Efficiency ||
		!strings.HasPrefix(p.Source, "ScratchPipe Sec. V / NVIDIA V100 datasheet") {
		t.Fatalf("profile %+v", p)
	}
	if info, _ := d.Info(ctx); info.Name != "hbm" {
		t.Fatalf("info name %q", info.Name)
	}
	// 792 bytes at 900 GB/s × 0.88 is 1 ns; 15.7 GFLOP at 15.7 TFLOPS is
	// 1 ms at peak, 1/ComputeEfficiency ms sustained; 12.48 GB over PCIe
	// gen3 at 16 GB/s × 0.78 is a second.
	res, err := d.Cost(ctx, &device.CostRequest{Ops: []device.Op{
		{Kind: device.Write, Bytes: 792},
		{Kind: device.Compute, FLOPs: 15_700_000_000},
		{Kind: device.Transfer, Bytes: 12_480_000_000},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ce := ComputeEfficiency
	if want := []int64{1, int64(math.Ceil(15_700_000_000 / (15700 * ce))), 1e9}; !slices.Equal(res.ModeledNs, want) {
		t.Fatalf("modeled ns %v, want %v", res.ModeledNs, want)
	}
}

// A named profile and a link: an A100 over PCIe gen5, and fields on top.
func TestProfileAndLink(t *testing.T) {
	ctx := context.Background()
	d := configured(t, `{"profile": "a100", "link": "pcie5", "efficiency": 0.8}`)
	p, _ := d.Profile(ctx)
	if p.Name != "NVIDIA A100 40 GB HBM2, PCIe gen5 x16" || p.BandwidthGBps != 1555 || p.Efficiency != 0.8 ||
		p.LinkGBps != 64 || p.CapacityBytes != 40<<30 || !strings.HasSuffix(p.Source, "overridden by options: efficiency") {
		t.Fatalf("profile %+v", p)
	}
	// Figures alone still override, as before profiles existed.
	d = configured(t, `{"name": "A100 40GB", "bandwidth_gbps": 1555, "link_gbps": 32, "capacity_bytes": 42949672960, "gflops": 19500, "efficiency": 0.8}`)
	p, _ = d.Profile(ctx)
	if p.Name != "A100 40GB" || p.BandwidthGBps != 1555 || p.Efficiency != 0.8 || p.LinkGBps != 32 {
		t.Fatalf("profile %+v", p)
	}
}

func TestProfiles(t *testing.T) {
	ctx := context.Background()
	for key := range Profiles() {
		p, err := configured(t, `{"profile": "`+key+`"}`).(*costmodel.Device).Params(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.Link == "" || !strings.Contains(p.Source, "link: PCIe") || p.ComputeEfficiency != ComputeEfficiency ||
			!(strings.Contains(p.Source, "calibrated") || strings.Contains(p.Source, "carried over")) {
			t.Errorf("profile %s: %+v", key, p)
		}
	}
	if _, ok := Profiles()[DefaultProfile]; !ok {
		t.Fatalf("default profile %q missing", DefaultProfile)
	}
}
