package hbm

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
)

func TestDefaultProfileIsV100(t *testing.T) {
	ctx := context.Background()
	d := New()
	if err := d.Configure(ctx, plugin.Setup{}); err != nil {
		t.Fatal(err)
	}
	p, err := d.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.BandwidthGBps != 900 || p.LinkGBps != 16 || p.CapacityBytes != 32<<30 || p.GFLOPS != 15700 ||
		p.Source != "ScratchPipe Sec. V / NVIDIA V100 datasheet" {
		t.Fatalf("profile %+v", p)
	}
	if info, _ := d.Info(ctx); info.Name != "hbm" {
		t.Fatalf("info name %q", info.Name)
	}
	// 900 bytes at 900 GB/s is 1 ns; 15.7 GFLOP at 15.7 TFLOPS is 1 ms.
	res, err := d.Cost(ctx, &device.CostRequest{Ops: []device.Op{
		{Kind: device.Write, Bytes: 900},
		{Kind: device.Compute, FLOPs: 15_700_000_000},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{1, 1e6}; !slices.Equal(res.ModeledNs, want) {
		t.Fatalf("modeled ns %v, want %v", res.ModeledNs, want)
	}
}

// An A100-like override shows that options replace profile figures.
func TestOverride(t *testing.T) {
	ctx := context.Background()
	d := New()
	opts := `{"name": "A100 40GB", "bandwidth_gbps": 1555, "link_gbps": 32, "capacity_bytes": 42949672960, "gflops": 19500, "efficiency": 0.8}`
	if err := d.Configure(ctx, plugin.Setup{Options: json.RawMessage(opts)}); err != nil {
		t.Fatal(err)
	}
	p, _ := d.Profile(ctx)
	if p.Name != "A100 40GB" || p.BandwidthGBps != 1555 || p.Efficiency != 0.8 || p.LinkGBps != 32 {
		t.Fatalf("profile %+v", p)
	}
}
