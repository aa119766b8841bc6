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

// testSpec has the test part as its default profile, and a second part
// with a link from the catalogue and per-kind and per-op efficiencies.
func testSpec() Spec {
	return Spec{Name: "test", Description: "test device", Default: "part", Profiles: map[string]Params{
		"part": {Profile: testProfile},
		"linked": {Profile: device.Profile{Name: "linked part", BandwidthGBps: 200, GFLOPS: 100, Efficiency: 0.5, Source: "another datasheet"},
			Link: "pcie3", ComputeEfficiency: 0.25, OpEfficiency: map[string]float64{"scatter": 0.1}},
	}}
}

func newConfigured(t *testing.T, opts string) *Device {
	t.Helper()
	d := New(testSpec())
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

// An op named in op_overhead_ms costs that much more, whatever its kind
// and size; peak drops the overhead with the efficiencies.
func TestOpOverhead(t *testing.T) {
	ctx := context.Background()
	ops := []device.Op{
		{Name: "train-step", Kind: device.Compute},           // 1.5 ms
		{Name: "train-step", Kind: device.Read, Bytes: 1000}, // 1.5 ms + 70
		{Name: "gather", Kind: device.Read, Bytes: 1000},     // 70
	}
	d := newConfigured(t, `{"op_overhead_ms": {"train-step": 1.5}}`)
	res, err := d.Cost(ctx, &device.CostRequest{Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{1_500_000, 1_500_070, 70}; !slices.Equal(res.ModeledNs, want) {
		t.Fatalf("modeled ns %v, want %v", res.ModeledNs, want)
	}
	if p, _ := d.Params(ctx); !strings.Contains(p.Source, "op_overhead_ms") {
		t.Errorf("source %q does not note the override", p.Source)
	}
	catalogue := map[string]float64{"train-step": 2}
	peak := New(Spec{Name: "t", Default: "p", Profiles: map[string]Params{
		"p": {Profile: testProfile, OpOverheadMs: catalogue}}})
	for opts, want := range map[string]int64{`{}`: 2_000_000, `{"peak": true}`: 0} {
		if err := peak.Configure(ctx, plugin.Setup{Options: json.RawMessage(opts)}); err != nil {
			t.Fatal(err)
		}
		res, err := peak.Cost(ctx, &device.CostRequest{Ops: ops[:1]})
		if err != nil || res.ModeledNs[0] != want {
			t.Errorf("options %s: %v, %v; want %d ns", opts, res, err, want)
		}
	}
	// op_overhead_ms merges over the profile's, as op_efficiency does, and
	// never writes into the catalogue.
	if err := peak.Configure(ctx, plugin.Setup{Options: json.RawMessage(`{"op_overhead_ms": {"h2d": 0.5}}`)}); err != nil {
		t.Fatal(err)
	}
	p, _ := peak.Params(ctx)
	if len(p.OpOverheadMs) != 2 || p.OpOverheadMs["train-step"] != 2 || p.OpOverheadMs["h2d"] != 0.5 {
		t.Errorf("merged op_overhead_ms %v", p.OpOverheadMs)
	}
	if len(catalogue) != 1 {
		t.Errorf("options leaked into the profile catalogue: %v", catalogue)
	}
	p.OpOverheadMs["train-step"] = 9
	if again, _ := peak.Params(ctx); again.OpOverheadMs["train-step"] != 2 {
		t.Error("Params shares its op_overhead_ms map with the device")
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
		`{"profile": "nope"}`, `{"link": "pcie9"}`, `{"link_efficiency": 0}`, `{"compute_efficiency": 2}`,
		`{"op_efficiency": {"scatter": 0}}`, `{"op_efficiency": {"": 0.5}}`, `{"peak": "yes"}`,
		`{"op_overhead_ms": {"train-step": -1}}`, `{"op_overhead_ms": {"": 1}}`, `{"servers": -1}`,
		`{"profile": {"name": "x", "bandwidth_gbps": 1, "efficiency": 1, "servers": -4}}`,
	} {
		d := New(testSpec())
		err := d.Configure(context.Background(), plugin.Setup{Options: json.RawMessage(opts)})
		if !errors.Is(err, plugin.ErrInvalidConfig) {
			t.Errorf("options %s: %v, want ErrInvalidConfig", opts, err)
		}
	}
	// All problems are reported at once.
	err := New(testSpec()).Configure(context.Background(),
		plugin.Setup{Options: json.RawMessage(`{"bandwidth_gbps": 0, "efficiency": 2}`)})
	if msg := err.Error(); !strings.Contains(msg, "bandwidth_gbps") || !strings.Contains(msg, "efficiency") {
		t.Errorf("joined errors: %v", err)
	}
}

func TestRejectsRequests(t *testing.T) {
	ctx := context.Background()
	d := New(testSpec())
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
	info, err := New(testSpec()).Info(context.Background())
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

// A named profile brings its link from the catalogue and its efficiency
// factors: per kind (link, compute) and per op name.
func TestProfileLinkAndEfficiencies(t *testing.T) {
	ctx := context.Background()
	d := newConfigured(t, `{"profile": "Linked"}`)
	p, err := d.Params(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "linked part, PCIe gen3 x16" || p.LinkGBps != 16 || p.LinkEfficiency != Links["pcie3"].Efficiency ||
		!strings.HasPrefix(p.Source, "another datasheet; link: PCIe gen3") {
		t.Fatalf("params %+v", p)
	}
	ops := []device.Op{
		{Name: "gather", Kind: device.Read, Bytes: 1000},     // 1000/(200·0.5)
		{Name: "scatter", Kind: device.Write, Bytes: 1000},   // 1000/(200·0.1): op_efficiency
		{Name: "h2d", Kind: device.Transfer, Bytes: 1248},    // 1248/(16·0.78)
		{Name: "mlp", Kind: device.Compute, FLOPs: 100_000},  // 1e5/(100·0.25)
		{Name: "scatter", Kind: device.Transfer, Bytes: 160}, // 160/(16·0.1): op_efficiency wins over the kind's
	}
	res, err := d.Cost(ctx, &device.CostRequest{Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{10, 50, 100, 4000, 100}; !slices.Equal(res.ModeledNs, want) {
		t.Fatalf("modeled ns %v, want %v", res.ModeledNs, want)
	}

	// Another link, then the peak figures, then an explicit option: in
	// that order.
	d = newConfigured(t, `{"profile": "linked", "link": "pcie5", "peak": true, "compute_efficiency": 0.5, "op_efficiency": {"gather": 0.25}}`)
	p, _ = d.Params(ctx)
	if p.LinkGBps != 64 || p.Efficiency != 1 || p.LinkEfficiency != 1 || p.ComputeEfficiency != 0.5 ||
		len(p.OpEfficiency) != 1 || p.OpEfficiency["gather"] != 0.25 || !strings.Contains(p.Name, "gen5") ||
		!strings.HasSuffix(p.Source, "; peak figures (every efficiency 1, no op overhead); overridden by options: compute_efficiency, op_efficiency") {
		t.Fatalf("params %+v", p)
	}
	// The catalogue is never written through a device's options.
	if testSpec().Profiles["linked"].OpEfficiency["gather"] != 0 {
		t.Fatal("options leaked into the profile catalogue")
	}
	// op_efficiency merges over the profile's.
	d = newConfigured(t, `{"profile": "linked", "op_efficiency": {"gather-reduce": 0.2}}`)
	if p, _ := d.Params(ctx); p.OpEfficiency["scatter"] != 0.1 || p.OpEfficiency["gather-reduce"] != 0.2 {
		t.Fatalf("merged op_efficiency %v", p.OpEfficiency)
	}
}

// Every link in the catalogue is complete and cited.
func TestLinks(t *testing.T) {
	for key, l := range Links {
		if l.Name == "" || !(l.GBps > 0) || !(l.Efficiency > 0 && l.Efficiency <= 1) || l.Source == "" {
			t.Errorf("link %s: %+v", key, l)
		}
	}
	if !slices.Equal(LinkNames(), []string{"pcie3", "pcie4", "pcie5"}) {
		t.Errorf("links %v", LinkNames())
	}
}

// A whole profile given in the options, as a graph's YAML does: every
// figure of the cost model, the link from the catalogue under its own
// figures, and options on top as over a named profile.
func TestInlineProfile(t *testing.T) {
	ctx := context.Background()
	d := newConfigured(t, `{"profile": {"name": "my part", "bandwidth_gbps": 400, "efficiency": 0.5,
		"capacity_bytes": 1024, "latency_ns": 10, "gflops": 2000, "compute_efficiency": 0.25,
		"link": "pcie4", "link_efficiency": 0.5, "op_efficiency": {"scatter": 0.1},
		"op_overhead_ms": {"train-step": 1}, "source": "my lab's measurements"}}`)
	p, err := d.Params(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "my part, PCIe gen4 x16" || p.Link != "pcie4" || p.LinkGBps != 32 || p.LinkEfficiency != 0.5 ||
		p.CapacityBytes != 1024 || !strings.HasPrefix(p.Source, "my lab's measurements; link: PCIe gen4") {
		t.Fatalf("params %+v", p)
	}
	res, err := d.Cost(ctx, &device.CostRequest{Ops: []device.Op{
		{Name: "gather", Kind: device.Read, Bytes: 2000},        // 10 + 2000/(400·0.5)
		{Name: "scatter", Kind: device.Write, Bytes: 400},       // 10 + 400/(400·0.1)
		{Name: "h2d", Kind: device.Transfer, Bytes: 1600},       // 10 + 1600/(32·0.5)
		{Name: "mlp", Kind: device.Compute, FLOPs: 5000},        // 5000/(2000·0.25)
		{Name: "train-step", Kind: device.Compute, FLOPs: 5000}, // 10 + 1 ms
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{20, 20, 110, 10, 1_000_010}; !slices.Equal(res.ModeledNs, want) {
		t.Fatalf("modeled ns %v, want %v", res.ModeledNs, want)
	}
	// The required figures alone; no source: the figures are the user's.
	p, _ = newConfigured(t, `{"profile": {"name": "bare", "bandwidth_gbps": 10, "efficiency": 1}}`).Params(ctx)
	if p.Source != UserSource || p.LinkGBps != 0 || p.GFLOPS != 0 {
		t.Fatalf("bare inline profile %+v", p)
	}
	// Options over an inline profile, as over a named one.
	p, _ = newConfigured(t, `{"profile": {"name": "x", "bandwidth_gbps": 10, "efficiency": 1}, "link": "pcie3", "efficiency": 0.5}`).Params(ctx)
	if p.LinkGBps != 16 || p.Efficiency != 0.5 || !strings.HasSuffix(p.Source, "overridden by options: efficiency") {
		t.Fatalf("inline profile with options %+v", p)
	}
	// A `link` option replaces the inline profile's link, named once.
	p, _ = newConfigured(t, `{"profile": {"name": "x", "bandwidth_gbps": 10, "efficiency": 1, "link": "pcie4"}, "link": "pcie5"}`).Params(ctx)
	if p.Name != "x, PCIe gen5 x16" || p.LinkGBps != 64 || p.Link != "pcie5" {
		t.Fatalf("inline profile with a link option %+v", p)
	}
}

// A bad inline profile is refused with each problem's key under profile::.
func TestInlineProfileErrors(t *testing.T) {
	for opts, keys := range map[string][]string{
		`{"profile": {}}`: {"profile::bandwidth_gbps", "profile::efficiency", "profile::name"},
		`{"profile": {"name": "x", "bandwidth_gbps": 0, "efficiency": 1}}`:                                  {"profile::bandwidth_gbps"},
		`{"profile": {"name": "x", "bandwith_gbps": 1, "efficiency": 1}}`:                                   {"profile::bandwith_gbps"},
		`{"profile": {"name": "x", "bandwidth_gbps": "fast", "efficiency": 1}}`:                             {"profile::bandwidth_gbps"},
		`{"profile": {"name": "x", "bandwidth_gbps": 1, "efficiency": 1, "link": "pcie9"}}`:                 {"profile::link"},
		`{"profile": {"name": "x", "bandwidth_gbps": 1, "efficiency": 1, "link_efficiency": 0}}`:            {"profile::link_efficiency"},
		`{"profile": {"name": "x", "bandwidth_gbps": 1, "efficiency": 1, "op_efficiency": {"scatter": 2}}}`: {"profile::op_efficiency::scatter"},
		`{"profile": {"name": "x", "bandwidth_gbps": 1, "efficiency": 1, "gflops": -1}}`:                    {"profile::gflops"},
		`{"profile": 3}`:      {"profile"},
		`{"profile": "nope"}`: {"profile"},
		`{"efficiency": 2}`:   {"efficiency"},
	} {
		err := New(testSpec()).Configure(context.Background(), plugin.Setup{Options: json.RawMessage(opts)})
		if !errors.Is(err, plugin.ErrInvalidConfig) {
			t.Errorf("options %s: %v, want ErrInvalidConfig", opts, err)
			continue
		}
		if key, _ := plugin.FieldOf(err); key != keys[0] {
			t.Errorf("options %s: first key %q, want %q (%v)", opts, key, keys[0], err)
		}
		for _, k := range keys {
			if !strings.Contains(err.Error(), k+":") {
				t.Errorf("options %s: %v does not name %s", opts, err, k)
			}
		}
	}
}

// TestServers checks the servers figure: 0 by default, set by an option
// (and noted in the source), and part of an inline profile.
func TestServers(t *testing.T) {
	ctx := context.Background()
	if p, _ := newConfigured(t, ``).Profile(ctx); p.Servers != 0 {
		t.Errorf("default servers = %d, want 0", p.Servers)
	}
	p, _ := newConfigured(t, `{"servers": 64}`).Profile(ctx)
	if p.Servers != 64 || !strings.Contains(p.Source, "servers") {
		t.Errorf("servers option: %d, source %q", p.Servers, p.Source)
	}
	p, _ = newConfigured(t, `{"profile": {"name": "x", "bandwidth_gbps": 1, "efficiency": 1, "servers": 8}}`).Profile(ctx)
	if p.Servers != 8 {
		t.Errorf("inline servers = %d, want 8", p.Servers)
	}
}
