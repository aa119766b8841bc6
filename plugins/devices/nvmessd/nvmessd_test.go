package nvmessd

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
)

// The drive prices reads, writes and its link, and refuses arithmetic
// (devicetest.Run's contract asks every device for Compute, so it is not
// run here).
func TestNoArithmetic(t *testing.T) {
	d := devicetest.Configured(t, New(), ``)
	if _, err := d.Cost(t.Context(), &device.CostRequest{Seq: 1, Ops: []device.Op{{Name: "mlp", Kind: device.Compute, FLOPs: 1 << 20}}}); err == nil ||
		!strings.Contains(err.Error(), "no arithmetic") {
		t.Fatalf("compute on a drive: %v", err)
	}
	got := devicetest.Costs(t, d, device.Op{Kind: device.Transfer, Bytes: 7_876_923})
	if want := []int64{1_100_000}; !slices.Equal(got, want) { // 1 ms + the latency
		t.Fatalf("transfer over PCIe 4.0 × 4: %v ns, want %v", got, want)
	}
}

// A read of 3.6864 MB at the random-read bandwidth (900K × 4 KiB =
// 3.6864 GB/s) is 1 ms, plus the 100 µs latency.
func TestDefaultProfileIsPM9A3(t *testing.T) {
	d := devicetest.Configured(t, New(), ``)
	p := devicetest.ProfileOf(t, d)
	if math.Abs(p.BandwidthGBps-3.6864) > 1e-9 || p.LatencyNs != 100_000 || !strings.Contains(p.Source, "900,000 IOPS") {
		t.Fatalf("profile %+v", p)
	}
	got := devicetest.Costs(t, d, device.Op{Name: "gather-reduce", Kind: device.Read, Bytes: 3_686_400})
	if want := []int64{1_100_000}; !slices.Equal(got, want) {
		t.Fatalf("modeled ns %v, want %v", got, want)
	}
}
