package network

import (
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
)

// 1448 × 3125 payload bytes are 3125 full frames of 1538 wire bytes:
// 4,806,250 bytes at 3.125 GB/s (25 GbE) take 1.538 ms, plus the 25 µs
// latency; a quarter of the 1.538 ms on 100 GbE.
func TestProfiles(t *testing.T) {
	d := devicetest.Configured(t, New(), ``)
	if p := devicetest.ProfileOf(t, d); !strings.Contains(p.Source, "802.3by") || p.LinkGBps != 3.125 {
		t.Fatalf("default profile %+v", p)
	}
	got := devicetest.Costs(t, d, device.Op{Name: "shard-fetch", Kind: device.Transfer, Bytes: 4_525_000})
	if want := []int64{1_563_000}; !slices.Equal(got, want) {
		t.Fatalf("25 GbE: %v ns, want %v", got, want)
	}
	d = devicetest.Configured(t, New(), `{"profile": "100gbe"}`)
	got = devicetest.Costs(t, d, device.Op{Name: "shard-fetch", Kind: device.Transfer, Bytes: 4_525_000})
	if want := []int64{409_500}; !slices.Equal(got, want) {
		t.Fatalf("100 GbE: %v ns, want %v", got, want)
	}
}

// A link has no arithmetic (devicetest.Run's contract asks every device
// for Compute, so it is not run here).
func TestNoArithmetic(t *testing.T) {
	d := devicetest.Configured(t, New(), ``)
	if _, err := d.Cost(t.Context(), &device.CostRequest{Seq: 1, Ops: []device.Op{{Name: "mlp", Kind: device.Compute, FLOPs: 1}}}); err == nil {
		t.Fatal("compute on a link was priced")
	}
}
