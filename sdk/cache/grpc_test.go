package cache_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

func connect(t *testing.T, impl cache.Cache) cache.Cache {
	return plugintest.InProcess(t, plugin.KindCache, cache.ServerPlugin(impl)).(cache.Cache)
}

func TestPlanCrossesTheWire(t *testing.T) {
	want := &cache.PlanRequest{
		Seq:          42,
		IDs:          region.Ref{Region: "flowrun-1-1-ids", Offset: 8, Length: 80},
		TableOffsets: []int64{0, 4, 10},
		Slots:        region.Ref{Region: "flowrun-1-2-slots", Length: 80},
		Hits:         region.Ref{Region: "flowrun-1-3-hits", Length: 10},
		Victims:      region.Ref{Region: "flowrun-1-4-victims", Length: 240},
		Future: []cache.Window{
			{Seq: 43, IDs: region.Ref{Region: "flowrun-1-5-ids", Length: 80}},
			{Seq: 44, IDs: region.Ref{Region: "flowrun-1-6-ids", Offset: 16, Length: 80}},
		},
	}
	result := &cache.PlanResult{Tables: []cache.TableStats{{Hits: 1, Misses: 3, Evictions: 2, DistinctHits: 1, DistinctMisses: 2}, {Misses: 6}}, Victims: 2}
	var got *cache.PlanRequest
	c := connect(t, &cachetest.Mock{PlanF: func(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
		got = req
		return result, nil
	}})
	res, err := c.Plan(context.Background(), want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plugin got %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(res, result) {
		t.Errorf("host got %+v, want %+v", res, result)
	}
}

func TestInfoAndConfigureCrossTheWire(t *testing.T) {
	setup := plugin.Setup{
		RunID: "r", Seed: 9, BatchSize: 128, Lookups: 20, DenseFeatures: 13,
		Tables:  []plugin.Table{{Rows: 10, Dim: 4}, {Rows: 1 << 40, Dim: 128}},
		Options: []byte(`{"capacity":16}`),
	}
	var got plugin.Setup
	c := connect(t, &cachetest.Mock{
		InfoF: func(context.Context) (plugin.Info, error) {
			return plugin.Info{Name: "m", Version: "1", Description: "d", Ops: []string{"x"},
				Config: []plugin.Field{{Name: "capacity", Type: "int", Default: "1", Description: "rows"}}}, nil
		},
		ConfigureF: func(_ context.Context, s plugin.Setup) error { got = s; return nil },
	})
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := plugin.Info{Kind: plugin.KindCache, Name: "m", Version: "1", APIVersion: plugin.APIVersion, Description: "d", Ops: []string{"x"},
		Config: []plugin.Field{{Name: "capacity", Type: "int", Default: "1", Description: "rows"}}}
	if !reflect.DeepEqual(info, want) {
		t.Errorf("Info = %+v, want %+v (kind and API version filled by the SDK)", info, want)
	}
	if err := c.Configure(context.Background(), setup); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, setup) {
		t.Errorf("plugin got %+v, want %+v", got, setup)
	}
}

func TestErrorsBecomeSentinels(t *testing.T) {
	for _, sentinel := range []error{plugin.ErrInvalidConfig, plugin.ErrNotConfigured, plugin.ErrInvalidRequest, plugin.ErrUnsupported} {
		sent := fmt.Errorf("lru: table 2: %w", sentinel)
		c := connect(t, &cachetest.Mock{PlanF: func(context.Context, *cache.PlanRequest) (*cache.PlanResult, error) {
			return nil, sent
		}})
		_, err := c.Plan(context.Background(), &cache.PlanRequest{})
		if !errors.Is(err, sentinel) || err.Error() != sent.Error() {
			t.Errorf("got %v, want %v wrapping %v", err, sent, sentinel)
		}
	}
}

func TestTraceContextReachesThePlugin(t *testing.T) {
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	})
	var got trace.SpanContext
	c := connect(t, &cachetest.Mock{PlanF: func(ctx context.Context, _ *cache.PlanRequest) (*cache.PlanResult, error) {
		got = trace.SpanContextFromContext(ctx)
		return &cache.PlanResult{}, nil
	}})
	ctx := trace.ContextWithSpanContext(context.Background(), parent)
	if _, err := c.Plan(ctx, &cache.PlanRequest{}); err != nil {
		t.Fatal(err)
	}
	if got.TraceID() != parent.TraceID() || got.SpanID() != parent.SpanID() || !got.IsSampled() || !got.IsRemote() {
		t.Errorf("plugin saw span context %+v, want the caller's %+v (remote)", got, parent)
	}
}

// declaring is a Mock that declares needs, recording the setup it got.
type declaring struct {
	cachetest.Mock
	needs cache.Needs
	err   error
	got   plugin.Setup
}

func (d *declaring) Needs(_ context.Context, setup plugin.Setup) (cache.Needs, error) {
	d.got = setup
	return d.needs, d.err
}

func TestNeedsCrossTheWire(t *testing.T) {
	impl := &declaring{needs: cache.Needs{HoldsWindows: true, Past: 4, Future: 3, NeverBypasses: true, ProfileBatches: 16,
		Memory: []cache.TableMemory{{CachedRows: 3, CachedRowBytes: 4*4 + 4, RowBytes: 4}, {CachedRows: 0, CachedRowBytes: 0}}}}
	setup := plugin.Setup{RunID: "r", Seed: 3, Tables: []plugin.Table{{Rows: 10, Dim: 4}}, BatchSize: 8, Lookups: 2, Options: []byte(`{"capacity":4}`)}
	n, err := cache.NeedsOf(context.Background(), connect(t, impl), setup)
	if err != nil || !reflect.DeepEqual(n, impl.needs) {
		t.Fatalf("Needs = %+v, %v; want %+v", n, err, impl.needs)
	}
	if !reflect.DeepEqual(impl.got, setup) {
		t.Errorf("plugin got %+v, want %+v", impl.got, setup)
	}
}

func TestNeedsFieldErrorCrossesTheWire(t *testing.T) {
	impl := &declaring{err: plugin.FieldErrorf("warmup_batches", "must be ≥ 0")}
	_, err := cache.NeedsOf(context.Background(), connect(t, impl), plugin.Setup{})
	if key, ok := plugin.FieldOf(err); !ok || key != "warmup_batches" || !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Fatalf("Needs: err = %v (key %q), want a plugin.FieldError for warmup_batches", err, key)
	}
}

func TestNeedsZeroWhenUndeclared(t *testing.T) {
	n, err := cache.NeedsOf(context.Background(), connect(t, &cachetest.Mock{}), plugin.Setup{})
	if err != nil || !reflect.DeepEqual(n, cache.Needs{}) {
		t.Fatalf("Needs of a policy that declares none = %+v, %v; want the zero Needs", n, err)
	}
}
