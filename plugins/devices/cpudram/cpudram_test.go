package cpudram

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

func TestDefaultProfileIsScratchPipeHost(t *testing.T) {
	ctx := context.Background()
	d := configured(t, ``)
	p, err := d.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.BandwidthGBps != 76.8 || p.LinkGBps != 16 || p.CapacityBytes != 256<<30 || p.Efficiency != Efficiency ||
		!strings.HasPrefix(p.Source, "ScratchPipe (MICRO'22) Sec. V / Intel ARK") || !strings.Contains(p.Source, "calibrated") {
		t.Fatalf("profile %+v", p)
	}
	info, _ := d.Info(ctx)
	if info.Name != "cpu-dram" || info.Kind != plugin.KindDevice {
		t.Fatalf("info %+v", info)
	}
	// The calibrated factors: a row gather at Efficiency, the embedding
	// backward at ScatterEfficiency.
	res, err := d.Cost(ctx, &device.CostRequest{Ops: []device.Op{
		{Name: "gather-reduce", Kind: device.Read, Bytes: 76_800_000},
		{Name: "scatter", Kind: device.Write, Bytes: 76_800_000},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e, se := Efficiency, ScatterEfficiency
	want := []int64{int64(math.Ceil(76_800_000 / (76.8 * e))), int64(math.Ceil(76_800_000 / (76.8 * se)))}
	if !slices.Equal(res.ModeledNs, want) {
		t.Fatalf("modeled ns %v, want %v", res.ModeledNs, want)
	}
}

// With peak: true the datasheet figures price every op.
func TestPeak(t *testing.T) {
	d := configured(t, `{"peak": true}`)
	// 768 bytes at 76.8 GB/s is 10 ns; 16 GB over PCIe gen3 is one second.
	res, err := d.Cost(context.Background(), &device.CostRequest{Ops: []device.Op{
		{Name: "scatter", Kind: device.Read, Bytes: 768},
		{Kind: device.Transfer, Bytes: 16e9},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{10, 1e9}; !slices.Equal(res.ModeledNs, want) {
		t.Fatalf("modeled ns %v, want %v", res.ModeledNs, want)
	}
}

// Every profile configures, is cited, and says where its efficiency
// factors come from.
func TestProfiles(t *testing.T) {
	ctx := context.Background()
	for key := range Profiles() {
		p, err := configured(t, `{"profile": "`+key+`"}`).(*costmodel.Device).Params(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.Link == "" || !strings.Contains(p.Source, "link: PCIe") || !strings.Contains(p.Source, "calibrated") || p.OpEfficiency["scatter"] != ScatterEfficiency {
			t.Errorf("profile %s: %+v", key, p)
		}
	}
	if _, ok := Profiles()[DefaultProfile]; !ok {
		t.Fatalf("default profile %q missing", DefaultProfile)
	}
}
