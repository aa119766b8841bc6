package hbm

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
)

func TestDefaultProfileIsV100(t *testing.T) {
	d := devicetest.Configured(t, New(), ``)
	if p := devicetest.ProfileOf(t, d); p.Name != "NVIDIA V100 32 GB HBM2, PCIe gen3 x16" || p.BandwidthGBps != 900 || p.LinkGBps != 16 ||
		p.CapacityBytes != 32<<30 || p.GFLOPS != 15700 || p.Efficiency != Efficiency ||
		!strings.HasPrefix(p.Source, "ScratchPipe Sec. V / NVIDIA V100 datasheet") {
		t.Fatalf("profile %+v", p)
	}
	// 792 bytes at 900 GB/s × 0.88 is 1 ns; 15.7 GFLOP at 15.7 TFLOPS is
	// 1 ms at peak, 1/ComputeEfficiency ms sustained; 12.48 GB over PCIe
	// gen3 at 16 GB/s × 0.78 is a second.
	got := devicetest.Costs(t, d,
		device.Op{Kind: device.Write, Bytes: 792},
		device.Op{Kind: device.Compute, FLOPs: 15_700_000_000},
		device.Op{Kind: device.Transfer, Bytes: 12_480_000_000})
	if want := []int64{1, int64(math.Ceil(15_700_000_000 / (15700 * ComputeEfficiency))), 1e9}; !slices.Equal(got, want) {
		t.Fatalf("modeled ns %v, want %v", got, want)
	}
}

// A named profile and a link: an A100 over PCIe gen5, and fields on top.
func TestProfileAndLink(t *testing.T) {
	p := devicetest.ProfileOf(t, devicetest.Configured(t, New(), `{"profile": "a100", "link": "pcie5", "efficiency": 0.8}`))
	if p.Name != "NVIDIA A100 40 GB HBM2, PCIe gen5 x16" || p.BandwidthGBps != 1555 || p.Efficiency != 0.8 ||
		p.LinkGBps != 64 || p.CapacityBytes != 40<<30 || !strings.HasSuffix(p.Source, "overridden by options: efficiency") {
		t.Fatalf("profile %+v", p)
	}
	// Figures alone still override, as before profiles existed.
	p = devicetest.ProfileOf(t, devicetest.Configured(t, New(), `{"name": "A100 40GB", "bandwidth_gbps": 1555, "link_gbps": 32, "capacity_bytes": 42949672960, "gflops": 19500, "efficiency": 0.8}`))
	if p.Name != "A100 40GB" || p.BandwidthGBps != 1555 || p.Efficiency != 0.8 || p.LinkGBps != 32 {
		t.Fatalf("profile %+v", p)
	}
}

// Every profile is valid, cited, and says where its efficiency factors
// come from.
func TestProfiles(t *testing.T) {
	if err := Spec().Validate(); err != nil {
		t.Fatal(err)
	}
	for key := range Spec().Profiles {
		p, _ := Spec().Params(key)
		if p.Link == "" || !strings.Contains(p.Source, "link: PCIe") || p.ComputeEfficiency != ComputeEfficiency ||
			!(strings.Contains(p.Source, "calibrated") || strings.Contains(p.Source, "carried over")) {
			t.Errorf("profile %s: %+v", key, p)
		}
	}
}

// A device defined in the graph's YAML alone: the snippet of
// docs/devices.md ("Your own profile"), decoded as the graph loader does,
// configures hbm with a part it has no profile for, and Cost prices ops
// with its figures (modeled, like every device's).
func TestProfileFromYAML(t *testing.T) {
	const graph = `
devices:
  gpu:
    plugin: builtin:hbm
    options:
      profile:
        name: My accelerator
        capacity_bytes: 25769803776   # 24 GiB
        bandwidth_gbps: 1200
        efficiency: 0.8
        gflops: 30000
        compute_efficiency: 0.3
        link: pcie4
        source: vendor datasheet; efficiencies guessed
`
	var g struct {
		Devices map[string]struct{ Options map[string]any }
	}
	if err := yaml.Unmarshal([]byte(graph), &g); err != nil {
		t.Fatal(err)
	}
	options, err := json.Marshal(g.Devices["gpu"].Options)
	if err != nil {
		t.Fatal(err)
	}
	d := devicetest.Configured(t, New(), string(options))
	if p := devicetest.ProfileOf(t, d); p.Name != "My accelerator, PCIe gen4 x16" || p.BandwidthGBps != 1200 || p.LinkGBps != 32 ||
		p.CapacityBytes != 24<<30 || !strings.HasPrefix(p.Source, "vendor datasheet; efficiencies guessed; link: PCIe gen4 x16") {
		t.Fatalf("profile %+v", p)
	}
	// 960 bytes at 1200 GB/s × 0.8 is 1 ns; 9 GFLOP at 30 TFLOPS × 0.3 is
	// 1 ms; 24.96 GB over PCIe gen4 at 32 GB/s × 0.78 is a second.
	got := devicetest.Costs(t, d,
		device.Op{Kind: device.Read, Bytes: 960},
		device.Op{Kind: device.Compute, FLOPs: 9_000_000_000},
		device.Op{Kind: device.Transfer, Bytes: 24_960_000_000})
	if want := []int64{1, 1_000_000, 1_000_000_000}; !slices.Equal(got, want) {
		t.Fatalf("modeled ns %v, want %v", got, want)
	}
}

// RecPipe's T4 at Table 2's figures, GFLOPS derived from its clock and
// cores, on PCIe gen3.
func TestT4(t *testing.T) {
	d := devicetest.Configured(t, New(), `{"profile": "t4", "peak": true}`)
	p := devicetest.ProfileOf(t, d)
	if p.BandwidthGBps != 300 || p.CapacityBytes != 15e9 || p.GFLOPS != 2995.2 || p.LinkGBps != 16 || p.Servers > 1 ||
		!strings.Contains(p.Source, "RecPipe (MICRO'21) Table 2") {
		t.Fatalf("profile %+v", p)
	}
	got := devicetest.Costs(t, d, device.Op{Name: "gather-reduce", Kind: device.Read, Bytes: 300e6},
		device.Op{Name: "mlp", Kind: device.Compute, FLOPs: 2995.2e6})
	if want := []int64{1e6, 1e6}; got[0] != want[0] || got[1]-want[1] > 1 || got[1] < want[1] {
		t.Fatalf("modeled ns %v, want %v", got, want)
	}
}
