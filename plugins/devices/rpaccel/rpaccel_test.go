package rpaccel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Hand-computed cases of cycles = ⌈K/R⌉·⌈N/C⌉·(M + R + C).
func TestLayerCycles(t *testing.T) {
	for _, c := range []struct {
		l          device.Layer
		rows, cols int
		want       int64
	}{
		{device.Layer{M: 4, K: 3, N: 2}, 2, 2, 2 * 1 * (4 + 2 + 2)},            // K spills into a second tile
		{device.Layer{M: 1, K: 1, N: 1}, 8, 8, 1 + 8 + 8},                      // one tile, fill and drain dominate
		{device.Layer{M: 4096, K: 13, N: 64}, 32, 32, 1 * 2 * (4096 + 64)},     // RMsmall's first layer on a frontend 32×32
		{device.Layer{M: 512, K: 512, N: 256}, 64, 64, 8 * 4 * (512 + 128)},    // RMlarge's second layer on (8,2)'s backend
		{device.Layer{M: 512, K: 512, N: 256}, 16, 32, 32 * 8 * (512 + 48)},    // ... and on (8,16)'s
		{device.Layer{M: 4096, K: 13, N: 512}, 128, 128, 1 * 4 * (4096 + 256)}, // the monolithic baseline
		{device.Layer{M: 0, K: 13, N: 512}, 128, 128, 0},
	} {
		if got := LayerCycles(c.l, c.rows, c.cols); got != c.want {
			t.Errorf("LayerCycles(%+v, %d×%d) = %d, want %d", c.l, c.rows, c.cols, got, c.want)
		}
	}
}

func configured(t *testing.T, opts string) device.Device {
	t.Helper()
	return devicetest.Configured(t, New(), opts)
}

// The paper's RMlarge, bottom 13-512-256-128-64-32 and top 383-96-1 (the
// dot interaction's 351 pairs and the 32-wide bottom output), on m items.
func rmlarge(m int64) []device.Layer {
	dims := [][2]int64{{13, 512}, {512, 256}, {256, 128}, {128, 64}, {64, 32}, {383, 96}, {96, 1}}
	out := make([]device.Layer, len(dims))
	for i, d := range dims {
		out[i] = device.Layer{M: m, K: d[0], N: d[1]}
	}
	return out
}

// Splitting the array changes each stage's sub-array shape, and with it
// the cost, exactly as the formula says; the frontend's, fixed at 8
// sub-arrays, does not change with the backend's count; total MACs are
// kept; and no layer beats the arithmetic bound FLOPs / (2 · MACs · f).
func TestSplitArray(t *testing.T) {
	backend := rmlarge(512)
	var front []int64
	for _, c := range []struct {
		arrays        string
		n, rows, cols int
	}{{"[8, 2]", 2, 64, 64}, {"[8, 8]", 8, 32, 32}, {"[8, 16]", 16, 16, 32}} {
		for stage, layers := range [][]device.Layer{rmlarge(4096), backend} {
			d := configured(t, fmt.Sprintf(`{"arrays": %s, "stage": %d}`, c.arrays, stage))
			p := devicetest.ProfileOf(t, d)
			got := devicetest.Costs(t, d, device.Op{Name: "mlp", Kind: device.Compute, Layers: layers})[0]
			rows, cols, n := 32, 32, 8
			if stage == 1 {
				n, rows, cols = c.n, c.rows, c.cols
			}
			var cycles, flops int64
			for _, l := range layers {
				cycles += LayerCycles(l, rows, cols)
				flops += l.FLOPs()
			}
			if want := int64(math.Ceil(float64(cycles) * 4)); got != want {
				t.Errorf("%s stage %d: %d ns, want %d cycles × 4 ns = %d", c.arrays, stage, got, cycles, want)
			}
			if int(p.Servers) != n || n*rows*cols != 128*128/2 {
				t.Errorf("%s stage %d: %d servers of %d×%d, want %d holding half of 128×128", c.arrays, stage, p.Servers, rows, cols, n)
			}
			if bound := float64(flops) / (2 * float64(rows*cols) * 0.25); float64(got) < bound {
				t.Errorf("%s stage %d: %d ns beats the arithmetic bound %g ns", c.arrays, stage, got, bound)
			}
			if stage == 0 {
				front = append(front, got)
			}
		}
	}
	if front[0] != front[1] || front[1] != front[2] {
		t.Errorf("the frontend's cost changed with the backend's split: %v", front)
	}
	// Fewer, larger backend arrays rank a query faster (the paper's (8,2)
	// at low load); more, smaller ones serve more at once.
	ns := func(opts string) int64 {
		return devicetest.Costs(t, configured(t, opts), device.Op{Name: "mlp", Kind: device.Compute, Layers: backend})[0]
	}
	if a, b, c := ns(`{"arrays": [8, 2], "stage": 1}`), ns(`{"arrays": [8, 8], "stage": 1}`), ns(`{"arrays": [8, 16], "stage": 1}`); !(a < b && b < c) {
		t.Errorf("backend query: (8,2) %d, (8,8) %d, (8,16) %d ns; want increasing", a, b, c)
	}
}

// Weights that do not fit in the stage's share of the 8 MB SRAM stream
// from DRAM at 64 GB/s, every query.
func TestWeightsFromDRAM(t *testing.T) {
	d := configured(t, `{"arrays": [1]}`)
	small := device.Layer{M: 128, K: 1024, N: 1024} // 4 MiB of fp32 weights: resident
	large := device.Layer{M: 128, K: 2048, N: 2048} // 16 MiB: streamed
	got := devicetest.Costs(t, d, device.Op{Name: "a", Kind: device.Compute, Layers: []device.Layer{small}},
		device.Op{Name: "b", Kind: device.Compute, Layers: []device.Layer{large}})
	if want := int64(LayerCycles(small, 128, 128) * 4); got[0] != want {
		t.Errorf("resident weights: %d ns, want %d", got[0], want)
	}
	want := float64(LayerCycles(large, 128, 128)*4) + 2048*2048*4/64.0
	if math.Abs(float64(got[1])-want) > 1 {
		t.Errorf("streamed weights: %d ns, want %g", got[1], want)
	}
}

// zipfKeys draws n lookups over rows of one table, Zipf(s) when s > 1,
// uniform when s is 0.
func zipfKeys(r *rand.Rand, s float64, rows uint64, n int) []uint64 {
	keys := make([]uint64, n)
	var z *rand.Zipf
	if s > 0 {
		z = rand.NewZipf(r, s, 1, rows-1)
	}
	for i := range keys {
		if z != nil {
			keys[i] = device.RowKey(0, int64(z.Uint64()))
		} else {
			keys[i] = device.RowKey(0, int64(r.Uint64N(rows)))
		}
	}
	return keys
}

// The hit rate comes from the keys: skewed (Zipf) lookups hit the static
// cache far more than uniform ones over the same rows once it is
// provisioned, and the gather is faster for it. Before provisioning the
// static cache is empty.
func TestHitRateFollowsLocality(t *testing.T) {
	run := func(s float64) (first, after Lookups, ns int64) {
		d := configured(t, `{"arrays": [1], "profile_batches": 4, "lookahead_bytes": 0}`).(*Device)
		m, _ := d.model()
		r := rand.New(rand.NewPCG(1, 2))
		for b := 0; b < 8; b++ {
			op := device.Op{Name: "gather-reduce", Kind: device.Read, Bytes: 4096 * 128, Keys: zipfKeys(r, s, 10_000_000, 4096)}
			l := m.Lookups(op)
			if b == 0 {
				first = l
			}
			after = l
			ns = int64(m.gatherNs(l))
		}
		return first, after, ns
	}
	zf, za, zns := run(1.05)
	uf, ua, uns := run(0)
	if zf.StaticHits != 0 || uf.StaticHits != 0 {
		t.Errorf("static hits before provisioning: zipf %d, uniform %d", zf.StaticHits, uf.StaticHits)
	}
	if !(za.HitRate() > ua.HitRate()+0.2) || !(zns < uns) {
		t.Errorf("zipf hit rate %.3f (%d ns), uniform %.3f (%d ns): want zipf well above and faster", za.HitRate(), zns, ua.HitRate(), uns)
	}
	t.Logf("hit rate after provisioning 12 MB of 128-B rows: zipf(1.05) %.3f, uniform %.3f over 10 M rows", za.HitRate(), ua.HitRate())
}

// The look-ahead cache serves a query's repeated rows (demand) or, with
// prefetch, its rows up to capacity; a row that fits in neither misses.
func TestLookahead(t *testing.T) {
	rows := func(k uint64) int64 { return 128 }
	keys := []uint64{1, 2, 1, 3, 2, 4}
	demand := newEmbCache(0, 2*128, false, 1).simulate(keys, rows)
	if demand.LookaheadHits != 1 || demand.Misses != 5 { // 1 hits; 2 was evicted by 3
		t.Errorf("demand LRU of 2 rows: %+v", demand)
	}
	pre := newEmbCache(0, 2*128, true, 1).simulate(keys, rows)
	if pre.LookaheadHits != 4 || pre.Misses != 2 || pre.Prefetched != 2 || pre.PrefetchedBytes != 256 { // rows 1, 2 prefetched
		t.Errorf("prefetch of 2 rows: %+v", pre)
	}
	// Provisioned after the first batch: the most frequent rows (1 and 2,
	// twice each) fill a static cache of two rows.
	e := newEmbCache(2*128, 0, false, 1)
	e.simulate(keys, rows)
	if got := e.simulate(keys, rows); got.StaticHits != 4 || got.Misses != 2 {
		t.Errorf("static after profiling: %+v", got)
	}
}

// The top-k unit drains in 200 cycles and keeps the scores on chip; the
// baseline's host filters after a PCIe round trip.
func TestTopK(t *testing.T) {
	ops := []device.Op{{Name: OpReadScores, Kind: device.Read, Bytes: 4 * 4096},
		{Name: OpTopK, Kind: device.Compute, FLOPs: 4096 * 8},
		{Name: OpWriteTopK, Kind: device.Write, Bytes: 8 * 64}}
	unit := devicetest.Costs(t, configured(t, ``), ops...)
	if want := []int64{0, 800, int64(math.Ceil(400 + 512/64.0))}; unit[0] != want[0] || unit[1] != want[1] || unit[2] != want[2] {
		t.Errorf("unit: %v, want %v", unit, want)
	}
	host := devicetest.Costs(t, configured(t, `{"profile": "centaur"}`), ops...)
	pcie := func(b float64) int64 { return int64(math.Ceil(10e3 + b/(16*0.78))) }
	if want := []int64{pcie(4 * 4096), int64(math.Ceil(4096 * 8 / 2.8)), pcie(8 * 64)}; host[0] != want[0] || host[1] != want[1] || host[2] != want[2] {
		t.Errorf("host: %v, want %v", host, want)
	}
}

func TestProfiles(t *testing.T) {
	c := devicetest.ProfileOf(t, configured(t, `{"profile": "centaur"}`))
	if c.Servers != 1 || c.GFLOPS != 2*128*128*0.25 || !strings.Contains(c.Name, "Centaur") {
		t.Errorf("centaur: %+v", c)
	}
	r := devicetest.ProfileOf(t, configured(t, `{"arrays": [8, 16], "stage": 1}`))
	if r.Servers != 16 || !strings.Contains(r.Name, "RPAccel(8,16) stage 1: 16 sub-arrays of 16×32") {
		t.Errorf("rpaccel: %+v", r)
	}
}

func TestRejectsOptions(t *testing.T) {
	for opts, key := range map[string]string{
		`{"profile": "tpu"}`:             "profile",
		`{"arrays": [8, 0]}`:             "arrays",
		`{"arrays": [8, 8], "stage": 2}`: "stage",
		`{"shares": [0.7, 0.7]}`:         "shares",
		`{"arrays": [8, 512]}`:           "arrays",
		`{"topk": "sort"}`:               "topk",
		`{"link": "nvlink"}`:             "link",
		`{"gather_efficiency": 0}`:       "gather_efficiency",
		`{"dram_gbps": -1}`:              "dram_gbps",
		`{"no_such_figure": 1}`:          "no_such_figure",
		`{"vector_dim": -4}`:             "vector_dim",
	} {
		err := New().Configure(context.Background(), plugin.Setup{Options: json.RawMessage(opts)})
		var fe *plugin.FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want a FieldError on %s", opts, err, key)
		}
	}
}

// The formula's MAC utilization of the two-stage pipeline (RMsmall on
// 4096 items, RMlarge on 512), on the monolithic 128×128 array and on
// RPAccel(8,8)'s 32×32 sub-arrays in 4 sub-batches: the paper measured
// 30 % and 60 % on RTL (Sec. 6.2, Fig. 10a). Splitting must raise it.
func TestUtilization(t *testing.T) {
	rmsmall := [][2]int64{{13, 64}, {64, 4}, {355, 64}, {64, 1}}
	large := [][2]int64{{13, 512}, {512, 256}, {256, 128}, {128, 64}, {64, 32}, {383, 96}, {96, 1}}
	use := func(m int64, dims [][2]int64, r, c int, times int64) (macs, slots int64) {
		for _, d := range dims {
			l := device.Layer{M: m, K: d[0], N: d[1]}
			macs += times * l.M * l.K * l.N
			slots += times * LayerCycles(l, r, c) * int64(r*c)
		}
		return macs, slots
	}
	m1, s1 := use(4096, rmsmall, 128, 128, 1)
	m2, s2 := use(512, large, 128, 128, 1)
	mono := float64(m1+m2) / float64(s1+s2)
	m1, s1 = use(1024, rmsmall, 32, 32, 4)
	m2, s2 = use(128, large, 32, 32, 4)
	split := float64(m1+m2) / float64(s1+s2)
	t.Logf("MAC utilization of the two-stage pipeline: monolithic %.3f, RPAccel(8,8) %.3f (paper 0.30, 0.60)", mono, split)
	if !(split > mono) {
		t.Errorf("splitting the array lowered utilization: %.3f -> %.3f", mono, split)
	}
}

// vector_dim prices a stage whose model's vectors are not the run's
// tables' (a frontend's RMsmall, dim 4, in a graph whose tables are dim
// 32): the same keys then move 8× fewer bytes, and a gather of misses
// only (no static cache) costs that much less DRAM time.
func TestVectorDim(t *testing.T) {
	tables := []plugin.Table{{Rows: 1 << 30, Dim: 32}}
	cost := func(opts string) int64 {
		d := New()
		if err := d.Configure(context.Background(), plugin.Setup{Tables: tables, Options: json.RawMessage(opts)}); err != nil {
			t.Fatal(err)
		}
		keys := make([]uint64, 4096)
		for i := range keys {
			keys[i] = device.RowKey(0, int64(i)*7919)
		}
		res, err := d.Cost(context.Background(), &device.CostRequest{Ops: []device.Op{{Name: "gather-reduce", Kind: device.Read, Bytes: 4096 * 136, Keys: keys}}})
		if err != nil {
			t.Fatal(err)
		}
		return res.ModeledNs[0]
	}
	const opts = `"static_bytes": 0, "lookahead_bytes": 0, "prefetch": false`
	full, small := cost(`{`+opts+`}`), cost(`{"vector_dim": 4, `+opts+`}`)
	m := configured(t, `{}`).(*Device)
	mm, _ := m.model()
	lat := mm.latencyNs
	if want := (float64(full)-lat)/8 + lat; math.Abs(float64(small)-want) > 2 {
		t.Errorf("dim 4: %d ns, want %.0f (dim 32's %d ns of DRAM time / 8)", small, want, full)
	}
}

// charge_prefetch adds the look-ahead prefetches' DRAM time to a gather:
// on a backend (prefetch on) the same keys cost exactly PrefetchNs more.
func TestChargePrefetch(t *testing.T) {
	tables := []plugin.Table{{Rows: 1 << 20, Dim: 32}}
	keys := make([]uint64, 512)
	for i := range keys {
		keys[i] = device.RowKey(0, int64(i)*7919)
	}
	op := device.Op{Name: "gather-reduce", Kind: device.Read, Bytes: 512 * 136, Keys: keys}
	cost := func(opts string) (int64, float64) {
		d := New().(*Device)
		if err := d.Configure(context.Background(), plugin.Setup{Tables: tables, Options: json.RawMessage(opts)}); err != nil {
			t.Fatal(err)
		}
		m, _ := d.model()
		pre := m.PrefetchNs(m.Lookups(op))
		res, err := d.Cost(context.Background(), &device.CostRequest{Ops: []device.Op{op}})
		if err != nil {
			t.Fatal(err)
		}
		return res.ModeledNs[0], pre
	}
	plain, pre := cost(`{"arrays": [8, 2], "stage": 1}`)
	charged, _ := cost(`{"arrays": [8, 2], "stage": 1, "charge_prefetch": true}`)
	if !(pre > 0) || math.Abs(float64(charged-plain)-pre) > 1 {
		t.Errorf("gather %d ns, with its prefetches charged %d ns: want %.0f ns more", plain, charged, pre)
	}
}
