package cpudram

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
)

func TestDefaultProfileIsScratchPipeHost(t *testing.T) {
	d := devicetest.Configured(t, New(), ``)
	p := devicetest.ProfileOf(t, d)
	if p.BandwidthGBps != 76.8 || p.LinkGBps != 16 || p.CapacityBytes != 256<<30 || p.Efficiency != Efficiency ||
		!strings.HasPrefix(p.Source, "ScratchPipe (MICRO'22) Sec. V / Intel ARK") || !strings.Contains(p.Source, "calibrated") {
		t.Fatalf("profile %+v", p)
	}
	// The calibrated factors: a row gather at Efficiency, the embedding
	// backward at ScatterEfficiency.
	got := devicetest.Costs(t, d,
		device.Op{Name: "gather-reduce", Kind: device.Read, Bytes: 76_800_000},
		device.Op{Name: "scatter", Kind: device.Write, Bytes: 76_800_000})
	e, se := Efficiency, ScatterEfficiency
	if want := []int64{int64(math.Ceil(76_800_000 / (76.8 * e))), int64(math.Ceil(76_800_000 / (76.8 * se)))}; !slices.Equal(got, want) {
		t.Fatalf("modeled ns %v, want %v", got, want)
	}
}

// With peak: true the datasheet figures price every op: 768 bytes at
// 76.8 GB/s is 10 ns; 16 GB over PCIe gen3 is one second.
func TestPeak(t *testing.T) {
	got := devicetest.Costs(t, devicetest.Configured(t, New(), `{"peak": true}`),
		device.Op{Name: "scatter", Kind: device.Read, Bytes: 768}, device.Op{Kind: device.Transfer, Bytes: 16e9})
	if want := []int64{10, 1e9}; !slices.Equal(got, want) {
		t.Fatalf("modeled ns %v, want %v", got, want)
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
		if p.Link == "" || !strings.Contains(p.Source, "link: PCIe") || !strings.Contains(p.Source, "calibrated") || p.OpEfficiency["scatter"] != ScatterEfficiency {
			t.Errorf("profile %s: %+v", key, p)
		}
		// cascade-lake has its own fitted efficiency; the others carry
		// ScratchPipe's host's.
		want := Efficiency
		if key == "cascade-lake" {
			want = CascadeLakeEfficiency
		}
		if p.Profile.Efficiency != want {
			t.Errorf("profile %s: efficiency %v, want %v", key, p.Profile.Efficiency, want)
		}
	}
}

// RecPipe's Cascade Lake server: Table 2's figures, one of 64 servers,
// each pricing a query at its core's share of the 75 GB/s and its core's
// AVX-512 peak.
func TestCascadeLake(t *testing.T) {
	d := devicetest.Configured(t, New(), `{"profile": "cascade-lake", "peak": true}`)
	p := devicetest.ProfileOf(t, d)
	if p.Servers != 64 || p.CapacityBytes != 384e9 || p.BandwidthGBps != 75.0/64 || p.GFLOPS != 179.2 ||
		p.LinkGBps != 16 || !strings.Contains(p.Source, "RecPipe (MICRO'21) Table 2") {
		t.Fatalf("profile %+v", p)
	}
	// 75 MB at 75/64 GB/s is 64 ms; 179.2 GFLOP at 179.2 GFLOPS is 1 s.
	got := devicetest.Costs(t, d, device.Op{Name: "gather-reduce", Kind: device.Read, Bytes: 75e6},
		device.Op{Name: "mlp", Kind: device.Compute, FLOPs: 179.2e9})
	if want := []int64{64e6, 1e9}; got[0] != want[0] || got[1]-want[1] > 1 || got[1] < want[1] {
		t.Fatalf("modeled ns %v, want %v", got, want)
	}
}
