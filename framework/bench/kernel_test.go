package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// fakeKernel answers with its function fields; a nil one answers with an
// empty result. It counts the batch calls.
type fakeKernel struct {
	InfoF           func(context.Context) (plugin.Info, error)
	ConfigureF      func(context.Context, plugin.Setup) error
	GatherReduceF   func(context.Context, *kernel.GatherReduceRequest) (*kernel.Result, error)
	ExpandCoalesceF func(context.Context, *kernel.ExpandCoalesceRequest) (*kernel.CoalesceResult, error)
	ScatterF        func(context.Context, *kernel.ScatterRequest) (*kernel.Result, error)
	calls           int
}

func (k *fakeKernel) Info(ctx context.Context) (plugin.Info, error) {
	if k.InfoF != nil {
		return k.InfoF(ctx)
	}
	return plugin.Info{Kind: plugin.KindKernel, Name: "fake"}, nil
}

func (k *fakeKernel) Configure(ctx context.Context, s plugin.Setup) error {
	if k.ConfigureF != nil {
		return k.ConfigureF(ctx, s)
	}
	return nil
}

func (k *fakeKernel) GatherReduce(ctx context.Context, req *kernel.GatherReduceRequest) (*kernel.Result, error) {
	k.calls++
	if k.GatherReduceF != nil {
		return k.GatherReduceF(ctx, req)
	}
	return &kernel.Result{BytesRead: 100, BytesWritten: 10}, nil
}

func (k *fakeKernel) ExpandCoalesce(ctx context.Context, req *kernel.ExpandCoalesceRequest) (*kernel.CoalesceResult, error) {
	k.calls++
	if k.ExpandCoalesceF != nil {
		return k.ExpandCoalesceF(ctx, req)
	}
	return &kernel.CoalesceResult{}, nil
}

func (k *fakeKernel) Scatter(ctx context.Context, req *kernel.ScatterRequest) (*kernel.Result, error) {
	k.calls++
	if k.ScatterF != nil {
		return k.ScatterF(ctx, req)
	}
	return &kernel.Result{}, nil
}

func (k *fakeKernel) Apply(context.Context, *kernel.ApplyRequest) (*kernel.Result, error) {
	return nil, errors.New("not benchmarked")
}

// smallKernel is a small benchmark of op.
func smallKernel(op string) KernelConfig {
	return KernelConfig{Op: op, Plugin: "fake", Tables: 2, Rows: 1000, Dim: 12, Batch: 16, Lookups: 5,
		Dist: "zipf", ZipfS: 1.05, Threads: 3, Reduce: "sum", Reps: 3, Warmup: 1, Seed: 1}
}

// uniqueRows counts the distinct rows each table's bags look up, reading
// the indices from their region as an out-of-process kernel would.
func uniqueRows(t *testing.T, bags kernel.Bags, tables, per int) []int64 {
	t.Helper()
	var m region.Mapper
	defer m.Close()
	b, err := m.Bytes(bags.Indices)
	if err != nil {
		t.Fatal(err)
	}
	indices := region.Int64s(b)
	counts := make([]int64, tables)
	for tb := range tables {
		seen := map[int64]bool{}
		for _, id := range indices[bags.IndexStart[tb] : bags.IndexStart[tb]+int64(per)] {
			seen[id] = true
		}
		counts[tb] = int64(len(seen))
	}
	return counts
}

// RunKernel configures the kernel for the tables with --threads as its
// workers, makes the warm-up and timed calls, and sizes the result; the
// casted gather-reduce coalesces into the rows expand-coalesce finds from
// the same indices.
func TestRunKernel(t *testing.T) {
	ctx := context.Background()
	c := smallKernel(kernel.OpExpandCoalesce)
	var setup plugin.Setup
	var unique []int64
	k := &fakeKernel{
		ConfigureF: func(_ context.Context, s plugin.Setup) error { setup = s; return nil },
		ExpandCoalesceF: func(_ context.Context, req *kernel.ExpandCoalesceRequest) (*kernel.CoalesceResult, error) {
			unique = uniqueRows(t, req.Bags, c.Tables, c.Batch*c.Lookups)
			return &kernel.CoalesceResult{Result: kernel.Result{BytesRead: 7}, Counts: unique}, nil
		},
	}
	res, err := RunKernel(ctx, k, c)
	if err != nil {
		t.Fatal(err)
	}
	if k.calls != c.Warmup+c.Reps {
		t.Errorf("%d calls, want %d warm-up + %d timed", k.calls, c.Warmup, c.Reps)
	}
	var opts map[string]any
	if err := json.Unmarshal(setup.Options, &opts); err != nil || opts["workers"] != 3.0 || len(setup.Tables) != 2 || setup.Tables[0].Rows != 1000 {
		t.Errorf("configured with %+v (%v)", setup, err)
	}
	if res.RowBytes != 2*16*5*12*4 || res.Stride != 12 || res.TableBytes != 2*1000*12*4 || res.BytesRead != 7 || res.Impl != "" {
		t.Errorf("result %+v", res)
	}
	if res.UniqueRows != unique[0]+unique[1] || res.UniqueRows <= 0 || res.UniqueRows > 2*16*5 {
		t.Errorf("%d unique rows, the kernel found %v", res.UniqueRows, unique)
	}

	c.Op = OpCastGatherReduce
	k = &fakeKernel{GatherReduceF: func(_ context.Context, req *kernel.GatherReduceRequest) (*kernel.Result, error) {
		if req.Reduce != kernel.Sum || len(req.Tables) != 2 || req.Tables[0].Rows != 16 {
			t.Errorf("casted gather-reduce over %+v", req)
		}
		return &kernel.Result{}, nil
	}}
	cast, err := RunKernel(ctx, k, c)
	if err != nil {
		t.Fatal(err)
	}
	if cast.UniqueRows != res.UniqueRows {
		t.Errorf("cast-gather-reduce coalesced %d rows, expand-coalesce %d", cast.UniqueRows, res.UniqueRows)
	}
}

// Scatter's rows hold the optimizer's state after their values.
func TestRunKernelScatterStride(t *testing.T) {
	c := smallKernel(kernel.OpScatter)
	c.Optimizer = "rowwise_adagrad"
	var opt kernel.Optimizer
	k := &fakeKernel{ScatterF: func(_ context.Context, req *kernel.ScatterRequest) (*kernel.Result, error) {
		opt = req.Optimizer
		return &kernel.Result{}, nil
	}}
	res, err := RunKernel(context.Background(), k, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stride != 13 || opt != kernel.RowWiseAdagrad {
		t.Errorf("stride %d, optimizer %v; want dim + 1 for row-wise Adagrad", res.Stride, opt)
	}
}

// A kernel that declares an implementation option has it reported: the
// value the options give, else its declared default; one that declares
// none reports nothing, whatever its name.
func TestRunKernelImpl(t *testing.T) {
	declares := func(context.Context) (plugin.Info, error) {
		return plugin.Info{Name: "any", Config: []plugin.Field{{Name: "workers"}, {Name: ImplOption, Default: "auto"}}}, nil
	}
	for _, c := range []struct {
		info    func(context.Context) (plugin.Info, error)
		options string
		want    string
	}{
		{declares, "", "auto"},
		{declares, `{"impl":"go"}`, "go"},
		{nil, `{"impl":"go"}`, ""},
		{func(context.Context) (plugin.Info, error) { return plugin.Info{}, errors.New("no info") }, "", ""},
	} {
		cfg := smallKernel(kernel.OpGatherReduce)
		cfg.Options = c.options
		res, err := RunKernel(context.Background(), &fakeKernel{InfoF: c.info}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Impl != c.want {
			t.Errorf("options %q: impl %q, want %q", c.options, res.Impl, c.want)
		}
	}
}

// A kernel's failure names the operator; a failed configure names the
// plugin.
func TestRunKernelErrors(t *testing.T) {
	boom := errors.New("boom")
	c := smallKernel(kernel.OpGatherReduce)
	_, err := RunKernel(context.Background(), &fakeKernel{GatherReduceF: func(context.Context, *kernel.GatherReduceRequest) (*kernel.Result, error) {
		return nil, boom
	}}, c)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "gather-reduce: ") {
		t.Errorf("err %v", err)
	}
	_, err = RunKernel(context.Background(), &fakeKernel{ConfigureF: func(context.Context, plugin.Setup) error { return boom }}, c)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "configure fake: ") {
		t.Errorf("err %v", err)
	}
}

func TestWriteKernelTable(t *testing.T) {
	r := &KernelResult{KernelConfig: smallKernel(OpCastGatherReduce), Stride: 12, RowBytes: 7680, Seconds: 0.002, SecondsMin: 0.001, SecondsMax: 0.003,
		GBps: 3.84, GBpsCPU: 4, BytesRead: 1e6, BytesWritten: 5e5, TrafficGBps: 0.75, UniqueRows: 88, CastSeconds: 0.0005,
		TableBytes: 1 << 30, HugePageBytes: 1 << 29, Impl: "go"}
	var b bytes.Buffer
	if err := WriteKernelTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"op           cast-gather-reduce (fake, impl go, 3 threads)\n",
		"tables       50.0% of 1.00 GiB in huge pages (advice false)\n",
		"time         median 2.000 ms (min 1.000, max 3.000) over 3 reps\n",
		"unique rows  88 of 160 lookups\n",
		"casting      0.500 ms once before the reps",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
