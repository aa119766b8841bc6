package cpudram

import (
	"context"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
)

func TestDefaultProfileIsScratchPipeHost(t *testing.T) {
	ctx := context.Background()
	d := New()
	if err := d.Configure(ctx, plugin.Setup{}); err != nil {
		t.Fatal(err)
	}
	p, err := d.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.BandwidthGBps != 76.8 || p.LinkGBps != 16 || p.CapacityBytes != 256<<30 || p.Source != "ScratchPipe (MICRO'22) Sec. V / Intel ARK" {
		t.Fatalf("profile %+v", p)
	}
	info, _ := d.Info(ctx)
	if info.Name != "cpu-dram" || info.Kind != plugin.KindDevice {
		t.Fatalf("info %+v", info)
	}
	// 768 bytes at 76.8 GB/s is 10 ns; 16 GB over PCIe gen3 is one second.
	res, err := d.Cost(ctx, &device.CostRequest{Ops: []device.Op{
		{Kind: device.Read, Bytes: 768},
		{Kind: device.Transfer, Bytes: 16e9},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{10, 1e9}; !slices.Equal(res.ModeledNs, want) {
		t.Fatalf("modeled ns %v, want %v", res.ModeledNs, want)
	}
}
