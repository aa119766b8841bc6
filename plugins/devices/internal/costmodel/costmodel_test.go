package costmodel

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
)

var testProfile = device.Profile{
	Name: "test part", CapacityBytes: 1 << 30, BandwidthGBps: 100, LinkGBps: 10,
	LatencyNs: 50, GFLOPS: 1000, Efficiency: 0.5, Source: "a datasheet",
}

func newConfigured(t *testing.T, opts string) *Device {
	t.Helper()
	d := New(Spec{Name: "test", Description: "test device", Defaults: testProfile})
	if err := d.Configure(context.Background(), plugin.Setup{Options: json.RawMessage(opts)}); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCostFormulas(t *testing.T) {
	d := newConfigured(t, ``)
	ops := []device.Op{
		{Name: "gather", Kind: device.Read, Bytes: 1000},      // 50 + 1000/(100·0.5)
		{Name: "insert", Kind: device.Write, Bytes: 500},      // 50 + 500/50
		{Name: "h2d", Kind: device.Transfer, Bytes: 1000},     // 50 + 1000/(10·0.5)
		{Name: "mlp", Kind: device.Compute, FLOPs: 1_000_000}, // 1e6/(1000·0.5), no latency
		{Name: "empty read", Kind: device.Read},               // latency only
		{Name: "no flops", Kind: device.Compute},              // nothing
		{Name: "rounding", Kind: device.Read, Bytes: 1},       // 50.02 → 51
	}
	res, err := d.Cost(context.Background(), &device.CostRequest{Seq: 3, Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{70, 60, 250, 2000, 50, 0, 51}; !slices.Equal(res.ModeledNs, want) {
		t.Fatalf("modeled ns %v, want %v", res.ModeledNs, want)
	}
}

func TestOptionsOverrideProfile(t *testing.T) {
	ctx := context.Background()
	d := newConfigured(t, `{"bandwidth_gbps": 200, "efficiency": 1, "name": "faster part"}`)
	p, err := d.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := testProfile
	want.Name, want.BandwidthGBps, want.Efficiency = "faster part", 200, 1
	want.Source = "a datasheet; overridden by options: bandwidth_gbps, efficiency"
	if p != want {
		t.Fatalf("profile %+v\nwant    %+v", p, want)
	}
	if p, _ := newConfigured(t, `{"latency_ns": 0, "source": "my lab"}`).Profile(ctx); p.Source != "my lab" || p.LatencyNs != 0 {
		t.Fatalf("explicit source: %+v", p)
	}
	if p, _ := newConfigured(t, `{"name": "renamed"}`).Profile(ctx); p.Source != testProfile.Source {
		t.Fatalf("a new name alone changes no figure, source %q", p.Source)
	}
}

func TestRejectsOptions(t *testing.T) {
	for _, opts := range []string{
		`{"bandwidth_gbps": 0}`, `{"efficiency": 0}`, `{"efficiency": 1.5}`, `{"link_gbps": -1}`,
		`{"latency_ns": -1}`, `{"gflops": -2}`, `{"capacity_bytes": -1}`, `{"name": " "}`, `{"bandwith_gbps": 1}`,
	} {
		d := New(Spec{Name: "test", Defaults: testProfile})
		err := d.Configure(context.Background(), plugin.Setup{Options: json.RawMessage(opts)})
		if !errors.Is(err, plugin.ErrInvalidConfig) {
			t.Errorf("options %s: %v, want ErrInvalidConfig", opts, err)
		}
	}
	// All problems are reported at once.
	err := New(Spec{Name: "test", Defaults: testProfile}).Configure(context.Background(),
		plugin.Setup{Options: json.RawMessage(`{"bandwidth_gbps": 0, "efficiency": 2}`)})
	if msg := err.Error(); !strings.Contains(msg, "bandwidth_gbps") || !strings.Contains(msg, "efficiency") {
		t.Errorf("joined errors: %v", err)
	}
}

func TestRejectsRequests(t *testing.T) {
	ctx := context.Background()
	d := New(Spec{Name: "test", Defaults: testProfile})
	if _, err := d.Cost(ctx, &device.CostRequest{}); !errors.Is(err, plugin.ErrNotConfigured) {
		t.Errorf("cost before configure: %v", err)
	}
	if _, err := d.Profile(ctx); !errors.Is(err, plugin.ErrNotConfigured) {
		t.Errorf("profile before configure: %v", err)
	}
	d = newConfigured(t, `{"link_gbps": 0, "gflops": 0}`)
	for _, op := range []device.Op{
		{Kind: device.Read, Bytes: -1},
		{Kind: device.Compute, FLOPs: -1},
		{Kind: 9, Bytes: 1},
		{Kind: device.Transfer, Bytes: 1},
		{Kind: device.Compute, FLOPs: 1},
	} {
		if _, err := d.Cost(ctx, &device.CostRequest{Ops: []device.Op{{Kind: device.Read, Bytes: 8}, op}}); !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Errorf("op %+v: %v, want ErrInvalidRequest", op, err)
		}
	}
	slow := newConfigured(t, `{"bandwidth_gbps": 1e-9}`)
	if _, err := slow.Cost(ctx, &device.CostRequest{Ops: []device.Op{{Kind: device.Read, Bytes: 1 << 62}}}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("overflowing time: %v", err)
	}
	if _, err := d.Cost(ctx, nil); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("nil request: %v", err)
	}
}

func TestInfoListsEveryOption(t *testing.T) {
	info, err := New(Spec{Name: "test", Defaults: testProfile}).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range info.Config {
		names = append(names, f.Name)
	}
	// Every JSON key of Config must be documented, and nothing else.
	raw, _ := json.Marshal(Config{})
	var keys map[string]any
	json.Unmarshal(raw, &keys)
	for k := range keys {
		if !slices.Contains(names, k) {
			t.Errorf("option %q missing from Info.Config", k)
		}
	}
	if len(names) != len(keys) {
		t.Errorf("Info.Config %v, options %v", names, keys)
	}
}
