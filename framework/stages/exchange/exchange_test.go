package exchange

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
)

// adagrad widens every row to dim values + dim accumulators: with the
// small dataset's dim 4 a row is 8 floats, 32 bytes, twice what its values
// alone would be. A row crosses the link whole.
var adagrad = config.Embedding{Optimizer: "adagrad", Epsilon: 1e-8}

const rowBytes = 2 * 4 * 4 // stride 8 floats of 4 bytes

// linkMock is a gpu that answers every op with 1 ns per 2 bytes plus 100,
// and keeps each request.
type linkMock struct {
	devicetest.Mock
	calls []*device.CostRequest
}

func newLinkMock() *linkMock {
	m := &linkMock{}
	m.CostF = func(_ context.Context, req *device.CostRequest) (*device.CostResult, error) {
		m.calls = append(m.calls, req)
		res := &device.CostResult{}
		for _, op := range req.Ops {
			res.ModeledNs = append(res.ModeledNs, op.Bytes/2+100)
		}
		return res, nil
	}
	return m
}

// mockEnv is an environment whose gpu is a linkMock and whose host must not
// be asked anything: exchange charges the link of the device it names.
func mockEnv(t *testing.T) (*stagetest.Env, *linkMock) {
	t.Helper()
	e := stagetest.New(t, stagetest.Options{Embedding: adagrad})
	if e.Set.Layout.Stride*4 != rowBytes {
		t.Fatalf("stride %d floats, the test assumes %d bytes a row", e.Set.Layout.Stride, rowBytes)
	}
	gpu := newLinkMock()
	host := &devicetest.Mock{CostF: func(context.Context, *device.CostRequest) (*device.CostResult, error) {
		t.Error("exchange asked the host for a cost")
		return nil, errors.New("not the link")
	}}
	e.Set.Devices = map[string]device.Device{"host": host, "gpu": gpu}
	return e, gpu
}

func newExchanger(t *testing.T, e *stagetest.Env) stage.Stage {
	t.Helper()
	return stagetest.MustCreate(t, NewFactory(), e.Set).(stage.Stage)
}

// planned is a batch as plan (and collect, when collected >= 0) leave it.
func planned(t *testing.T, e *stagetest.Env, seq uint64, misses, collected, victims int64) *batch.Batch {
	t.Helper()
	b := e.Batch(t, seq)
	b.SetStat("misses", misses)
	b.SetStat("victims", victims)
	if collected >= 0 {
		b.SetStat("collected_rows", collected)
		b.SetStat("collected_victims", victims)
	}
	return b
}

func totals(e *stagetest.Env) (toDevice, toHost float64) {
	_, tot, _ := e.Set.Metrics.Snapshot()
	return tot["link.bytes_to_device"], tot["link.bytes_to_host"]
}

// With collect upstream, the rows it staged (each missed row once per
// table, not every missed lookup) travel to the device and the victims
// back: two transfers over the gpu's link, in one request, whose modeled
// time is the stage's and the gpu's.
func TestExchangeChargesTheLinkForStagedRowsAndVictims(t *testing.T) {
	e, gpu := mockEnv(t)
	x := newExchanger(t, e)
	b := planned(t, e, 7, 12, 5, 3) // 12 missed lookups of 5 distinct rows; 3 victims
	stagetest.Process(t, x, b)

	if len(gpu.calls) != 1 {
		t.Fatalf("gpu asked %d times, want once for the batch", len(gpu.calls))
	}
	req := gpu.calls[0]
	want := []device.Op{
		{Name: "rows-to-device", Kind: device.Transfer, Bytes: 5 * rowBytes},
		{Name: "victims-to-host", Kind: device.Transfer, Bytes: 3 * rowBytes},
	}
	if req.Seq != 7 || !reflect.DeepEqual(req.Ops, want) {
		t.Errorf("cost request seq %d ops %+v, want seq 7 ops %+v", req.Seq, req.Ops, want)
	}
	// The two directions at once: the longer one.
	ns := max(int64(5*rowBytes/2+100), int64(3*rowBytes/2+100))
	for stat, v := range map[string]int64{
		"bytes_to_device":       5 * rowBytes,
		"bytes_to_host":         3 * rowBytes,
		"modeled_ns":            ns,
		stage.DeviceStat("gpu"): ns,
		"misses":                12, // upstream stats travel on untouched
		"collected_rows":        5,
		"victims":               3,
		"collected_victims":     3,
	} {
		if got := b.Stats[stat]; got != v {
			t.Errorf("%s = %d, want %d", stat, got, v)
		}
	}
	if _, ok := b.Stats[stage.DeviceStat("host")]; ok {
		t.Errorf("charged the host: %v", b.Stats)
	}
	if d, h := totals(e); d != 5*rowBytes || h != 3*rowBytes {
		t.Errorf("link totals %g to device, %g to host; want %d and %d", d, h, 5*rowBytes, 3*rowBytes)
	}
}

// Without collect (load → plan → exchange → train), every missed lookup is
// charged, as the README says.
func TestExchangeWithoutCollectChargesEveryMissedLookup(t *testing.T) {
	e, gpu := mockEnv(t)
	x := newExchanger(t, e)
	b := planned(t, e, 0, 12, -1, 4)
	stagetest.Process(t, x, b)
	if got := gpu.calls[0].Ops; got[0].Bytes != 12*rowBytes || got[1].Bytes != 4*rowBytes {
		t.Errorf("charged %d and %d bytes, want %d and %d", got[0].Bytes, got[1].Bytes, 12*rowBytes, 4*rowBytes)
	}
	if b.Stats["bytes_to_device"] != 12*rowBytes || b.Stats["bytes_to_host"] != 4*rowBytes {
		t.Errorf("stats %v", b.Stats)
	}

	// collected_rows of 0 is a count (every miss bypassed the cache), not
	// a missing one: nothing travels to the device.
	b = planned(t, e, 1, 12, 0, 0)
	stagetest.Process(t, x, b)
	if b.Stats["bytes_to_device"] != 0 {
		t.Errorf("collected nothing, charged %d bytes to the device", b.Stats["bytes_to_device"])
	}
}

// On the built-in hbm device (a V100 behind PCIe gen3, 16 GB/s a
// direction, ≈12.5 sustained) the rows are priced at the link's rate, not
// at HBM's 900 GB/s.
func TestExchangeIsPricedAtTheLinkRate(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{Embedding: adagrad})
	x := newExchanger(t, e)
	const rows, victims = 1_000_000, 250_000
	b := planned(t, e, 0, rows, rows, victims)
	stagetest.Process(t, x, b)
	bytes := float64((rows + victims) * rowBytes)
	ns := float64(b.Stats["modeled_ns"])
	if lo, hi := bytes/16, bytes/10; ns < lo || ns > hi {
		t.Errorf("%g bytes over the link modeled at %g ns, want between %g (16 GB/s) and %g (10 GB/s)", bytes, ns, lo, hi)
	}
	if got := b.Stats[stage.DeviceStat("gpu")]; got != b.Stats["modeled_ns"] {
		t.Errorf("gpu charged %d ns, the stage %d", got, b.Stats["modeled_ns"])
	}

	// More rows, more time.
	more := planned(t, e, 1, 2*rows, 2*rows, victims)
	stagetest.Process(t, x, more)
	if more.Stats["modeled_ns"] <= b.Stats["modeled_ns"] {
		t.Errorf("twice the rows modeled at %d ns, once at %d", more.Stats["modeled_ns"], b.Stats["modeled_ns"])
	}
}

// A batch that hits everywhere moves nothing, costs nothing on a link
// without latency, and still goes on with its counts (zeros) set.
func TestExchangeEmptyBatch(t *testing.T) {
	e := stagetest.New(t, stagetest.Options{Embedding: adagrad})
	x := newExchanger(t, e)
	b := planned(t, e, 3, 0, 0, 0)
	stagetest.Process(t, x, b)
	for _, stat := range []string{"bytes_to_device", "bytes_to_host", "modeled_ns"} {
		if v, ok := b.Stats[stat]; !ok || v != 0 {
			t.Errorf("%s = %d (set: %t), want 0 and set", stat, v, ok)
		}
	}
	if d, h := totals(e); d != 0 || h != 0 {
		t.Errorf("link totals %g, %g after an empty batch", d, h)
	}
	// On a link with a fixed cost per transfer, an empty batch costs at
	// most what the link says of moving nothing, and no bytes.
	e, gpu := mockEnv(t)
	x = newExchanger(t, e)
	b = planned(t, e, 4, 0, -1, 0)
	stagetest.Process(t, x, b)
	var said int64
	for _, c := range gpu.calls {
		for _, op := range c.Ops {
			if op.Bytes != 0 {
				t.Errorf("empty batch charged %+v", op)
			}
			said = 100 // both directions at once
		}
	}
	if b.Stats["modeled_ns"] != said || b.Stats["bytes_to_device"] != 0 || b.Stats["bytes_to_host"] != 0 {
		t.Errorf("stats %v, want no bytes and the %d ns the link asked", b.Stats, said)
	}
}

// Batch after batch, each is charged for its own traffic, in the order it
// came, and nothing carries over; held-out batches cross the link too but
// are left out of the training totals.
func TestExchangeBatchAfterBatch(t *testing.T) {
	e, gpu := mockEnv(t)
	x := newExchanger(t, e)
	var wantDevice, wantHost int64
	for seq := range uint64(6) {
		rows, victims := int64(seq*3+1), int64(seq)
		b := planned(t, e, seq, rows*2, rows, victims)
		b.Eval = seq == 5
		stagetest.Process(t, x, b)
		if b.Stats["bytes_to_device"] != rows*rowBytes || b.Stats["bytes_to_host"] != victims*rowBytes {
			t.Errorf("batch %d: %d and %d bytes, want %d and %d", seq,
				b.Stats["bytes_to_device"], b.Stats["bytes_to_host"], rows*rowBytes, victims*rowBytes)
		}
		if want := max(rows, victims)*rowBytes/2 + 100; b.Stats["modeled_ns"] != want || b.Stats[stage.DeviceStat("gpu")] != want {
			t.Errorf("batch %d: modeled %d ns, gpu %d ns; want %d", seq, b.Stats["modeled_ns"], b.Stats[stage.DeviceStat("gpu")], want)
		}
		if !b.Eval {
			wantDevice += rows * rowBytes
			wantHost += victims * rowBytes
		}
	}
	var seqs []uint64
	for _, c := range gpu.calls {
		seqs = append(seqs, c.Seq)
	}
	if !slices.Equal(seqs, []uint64{0, 1, 2, 3, 4, 5}) {
		t.Errorf("link asked for batches %v, want 0 to 5 in order", seqs)
	}
	if d, h := totals(e); d != float64(wantDevice) || h != float64(wantHost) {
		t.Errorf("link totals %g to device, %g to host; want %d and %d (training batches only)", d, h, wantDevice, wantHost)
	}
}

// A link that fails fails the batch, which records nothing.
func TestExchangeDeviceFailure(t *testing.T) {
	e, gpu := mockEnv(t)
	errDown := errors.New("link down")
	gpu.CostF = func(context.Context, *device.CostRequest) (*device.CostResult, error) { return nil, errDown }
	x := newExchanger(t, e)
	b := planned(t, e, 2, 4, 4, 1)
	if err := x.Process(context.Background(), b); !errors.Is(err, errDown) {
		t.Fatalf("err = %v, want the link's", err)
	}
	for _, stat := range []string{"bytes_to_device", "bytes_to_host", "modeled_ns", stage.DeviceStat("gpu")} {
		if _, ok := b.Stats[stat]; ok {
			t.Errorf("a failed batch recorded %s", stat)
		}
	}
	if d, h := totals(e); d != 0 || h != 0 {
		t.Errorf("a failed batch added %g, %g to the link totals", d, h)
	}
}

func TestConfig(t *testing.T) {
	c := NewFactory().CreateDefaultConfig().(*Config)
	if err := c.Validate(); err != nil || c.Device != "gpu" {
		t.Errorf("defaults %+v: %v", c, err)
	}
	if got := c.DeviceNames(); !slices.Equal(got, []string{"gpu"}) {
		t.Errorf("DeviceNames = %v", got)
	}
	if got := c.ModeledResources(); !slices.Equal(got, []string{"link:gpu"}) {
		t.Errorf("ModeledResources = %v, want the link, not the gpu's memory", got)
	}

	// Options as a graph file gives them, decoded over the defaults.
	r, err := stage.NewRegistry(NewFactory())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := r.DecodeOptions("exchange", map[string]any{"device": "host"})
	if err != nil || cfg.(*Config).Device != "host" {
		t.Errorf("device: host: %+v, %v", cfg, err)
	}
	for name, tc := range map[string]struct {
		options map[string]any
		want    string
	}{
		"empty device": {map[string]any{"device": ""}, "device: must name a device of the graph"},
		"unknown key":  {map[string]any{"device": "gpu", "link": "pcie3"}, `link: unknown key "link" (allowed: device, dsf)`},
		"wrong type":   {map[string]any{"device": 3}, "device: must be a string"},
		"a list":       {map[string]any{"device": []any{"gpu", "host"}}, "device: must be a string"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := r.DecodeOptions("exchange", tc.options); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}

	// A device the graph lacks is named when the stage is made.
	e := stagetest.New(t, stagetest.Options{})
	_, err = stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) { c.(*Config).Device = "tpu" })
	if err == nil || !strings.Contains(err.Error(), `device "tpu" is not a device of the graph`) || !strings.Contains(err.Error(), "exchange/test") {
		t.Errorf("unknown device: err = %v", err)
	}
}

// A batch that carries no plan counts (exchange driven where no plan stage
// is upstream; the graph refuses such a wiring) is an error naming the
// batch and the count, not a link that moved nothing.
func TestExchangeNeedsAPlanUpstream(t *testing.T) {
	e, gpu := mockEnv(t)
	x := newExchanger(t, e)
	for name, stats := range map[string]map[string]int64{
		"nothing":        {},
		"no victims":     {"misses": 4},
		"no misses":      {"victims": 2},
		"only collected": {"collected_rows": 3},
	} {
		t.Run(name, func(t *testing.T) {
			b := e.Batch(t, 9)
			for k, v := range stats {
				b.SetStat(k, v)
			}
			err := x.Process(context.Background(), b)
			if err == nil || !strings.Contains(err.Error(), "batch 9 carries no") || !strings.Contains(err.Error(), "exchange needs a stage upstream") {
				t.Fatalf("err = %v, want one naming batch 9 and the missing producer", err)
			}
			if _, ok := b.Stats["bytes_to_device"]; ok {
				t.Errorf("charged a batch without plan counts: %v", b.Stats)
			}
		})
	}
	if len(gpu.calls) != 0 {
		t.Errorf("asked the link %d times for batches it cannot price", len(gpu.calls))
	}
}

// dsf: false is HECA's no-DSF baseline: every missed lookup crosses the
// link even with collect's de-duplicated rows upstream.
func TestExchangeWithoutDSFChargesEveryMissedLookup(t *testing.T) {
	e, gpu := mockEnv(t)
	x, err := stagetest.Create(t, NewFactory(), e.Set, func(c stage.Config) {
		off := false
		c.(*Config).DSF = &off
	})
	if err != nil {
		t.Fatal(err)
	}
	b := planned(t, e, 3, 12, 5, 2) // 12 missed lookups of 5 distinct rows
	stagetest.Process(t, x.(stage.Stage), b)
	if got := gpu.calls[0].Ops; got[0].Bytes != 12*rowBytes || got[1].Bytes != 2*rowBytes {
		t.Errorf("charged %d and %d bytes, want %d and %d", got[0].Bytes, got[1].Bytes, 12*rowBytes, 2*rowBytes)
	}
}
