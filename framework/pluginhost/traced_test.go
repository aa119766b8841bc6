package pluginhost_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/kerneltest"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/modeltest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Every plugin call's span carries the request's batch sequence and what
// the result says (hits, bytes, loss); a failed call's span records the
// error; a call that returns no result and no error adds nothing.
func TestCallSpansCarryResults(t *testing.T) {
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	errDown := errors.New("down")
	var nilPlan bool
	h := newHost(t, pluginhost.Settings{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		Builtins: pluginhost.Builtins{
			Caches: map[string]func() cache.Cache{"m": func() cache.Cache {
				return &cachetest.Mock{PlanF: func(context.Context, *cache.PlanRequest) (*cache.PlanResult, error) {
					if nilPlan {
						return nil, nil
					}
					return &cache.PlanResult{Tables: []cache.TableStats{{Hits: 1, Misses: 2, Evictions: 3}, {Hits: 10, Misses: 20, Evictions: 30}}}, nil
				}}
			}},
			Kernels: map[string]func() kernel.Kernel{"m": func() kernel.Kernel {
				return &kerneltest.Mock{ExpandCoalesceF: func(context.Context, *kernel.ExpandCoalesceRequest) (*kernel.CoalesceResult, error) {
					return &kernel.CoalesceResult{Result: kernel.Result{BytesRead: 100, BytesWritten: 50, FLOPs: 7}}, nil
				}}
			}},
			Models: map[string]func() model.Model{"m": func() model.Model {
				return &modeltest.Mock{StepF: func(context.Context, *model.StepRequest) (*model.StepResult, error) {
					return &model.StepResult{Loss: 0.5, FLOPs: 9}, nil
				}}
			}},
			Devices: map[string]func() device.Device{"m": func() device.Device {
				return &devicetest.Mock{CostF: func(context.Context, *device.CostRequest) (*device.CostResult, error) {
					return nil, errDown
				}}
			}},
		},
	})
	c, err := h.Cache(ctx, "builtin:m")
	if err != nil {
		t.Fatal(err)
	}
	k, err := h.Kernel(ctx, "builtin:m")
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Model(ctx, "builtin:m")
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.Device(ctx, "builtin:m")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Plan(ctx, &cache.PlanRequest{Seq: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.ExpandCoalesce(ctx, &kernel.ExpandCoalesceRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Step(ctx, &model.StepRequest{Seq: 5, Train: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Cost(ctx, &device.CostRequest{Seq: 6, Ops: make([]device.Op, 2)}); !errors.Is(err, errDown) {
		t.Fatalf("Cost: %v, want the device's error", err)
	}
	nilPlan = true
	if _, err := c.Plan(ctx, &cache.PlanRequest{Seq: 8}); err != nil {
		t.Fatal(err)
	}

	attrs := func(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, a := range s.Attributes() {
			m[a.Key] = a.Value
		}
		return m
	}
	spans := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = append(spans[s.Name()], s)
	}
	for name, want := range map[string]map[attribute.Key]any{
		"cache/m.Plan":            {"flowrun.batch.seq": int64(4), "flowrun.cache.hits": int64(11), "flowrun.cache.misses": int64(22), "flowrun.cache.evictions": int64(33), "flowrun.plugin.kind": "cache"},
		"kernel/m.ExpandCoalesce": {"flowrun.bytes_read": int64(100), "flowrun.bytes_written": int64(50), "flowrun.flops": int64(7)},
		"model/m.Step":            {"flowrun.batch.seq": int64(5), "flowrun.model.train": true, "flowrun.model.loss": 0.5, "flowrun.flops": int64(9)},
		"device/m.Cost":           {"flowrun.batch.seq": int64(6), "flowrun.device.ops": int64(2)},
	} {
		if len(spans[name]) == 0 {
			t.Errorf("no span %s; spans: %v", name, names(rec.Ended()))
			continue
		}
		got := attrs(spans[name][0])
		for key, v := range want {
			if a, ok := got[key]; !ok || a.AsInterface() != v {
				t.Errorf("%s: %s = %v, want %v", name, key, a.AsInterface(), v)
			}
		}
	}
	if s := spans["device/m.Cost"]; len(s) == 1 && (s[0].Status().Code != codes.Error || len(s[0].Events()) == 0) {
		t.Errorf("failed call's span: status %v, events %v; want the error recorded", s[0].Status(), s[0].Events())
	}
	if s := spans["cache/m.Plan"]; len(s) != 2 {
		t.Errorf("%d Plan spans, want 2", len(s))
	} else if _, ok := attrs(s[1])["flowrun.cache.hits"]; ok || s[1].Status().Code == codes.Error {
		t.Errorf("a Plan with no result: %v, status %v", s[1].Attributes(), s[1].Status())
	}
}

// declaring is a cache mock that declares its Needs.
type declaring struct {
	cachetest.Mock
	needs cache.Needs
}

func (d *declaring) Needs(context.Context, plugin.Setup) (cache.Needs, error) { return d.needs, nil }

// The host's wrapper keeps a policy's Needs: one that declares them
// declares them through it (in a span), one that does not stays one that
// does not, so that the host knows the difference.
func TestCacheKeepsItsNeeds(t *testing.T) {
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	want := cache.Needs{HoldsWindows: true, Past: 4, ProfileBatches: 8}
	h := newHost(t, pluginhost.Settings{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		Builtins: pluginhost.Builtins{Caches: map[string]func() cache.Cache{
			"declares": func() cache.Cache { return &declaring{needs: want} },
			"silent":   func() cache.Cache { return &cachetest.Mock{} },
		}},
	})
	c, err := h.Cache(ctx, "builtin:declares")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(cache.Declarer); !ok {
		t.Fatal("a declaring policy lost its Needs in the host's wrapper")
	}
	if got, err := cache.NeedsOf(ctx, c, plugin.Setup{}); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("NeedsOf = %+v, %v; want %+v", got, err, want)
	}
	if ended := rec.Ended(); len(ended) != 1 || ended[0].Name() != "cache/declares.Needs" {
		t.Errorf("spans %v, want one cache/declares.Needs", ended)
	}
	if c, err = h.Cache(ctx, "builtin:silent"); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(cache.Declarer); ok {
		t.Error("a policy that declares nothing is a Declarer through the host's wrapper")
	}
}
