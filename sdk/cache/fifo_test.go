package cache_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// fifo is a throwaway policy written the way a third-party author would,
// through sdk/cache and its plankit only: first in, first out, among the
// slots the batch does not use. It declares a profile of its own option's
// number of batches, to show Needs crossing the wire.
type fifo struct {
	plankit.Guard
	tables []*fifoTable
	clock  uint64
}

type fifoOptions struct {
	plankit.HostOptions
	Profile int `json:"profile_batches"`
}

func (o fifoOptions) Validate() error {
	if o.Profile < 0 {
		return plugin.FieldErrorf("profile_batches", "must be ≥ 0, got %d", o.Profile)
	}
	return o.HostOptions.Validate()
}

type fifoTable struct {
	plankit.Slots
	queue    *plankit.SlotHeap // un-held slots, oldest insert first
	inserted []uint64
	held     []int32
	clock    *uint64
}

func (tb *fifoTable) Resident() *plankit.Slots { return &tb.Slots }
func (tb *fifoTable) Tick()                    { *tb.clock++ }
func (tb *fifoTable) Victim() (int32, bool)    { return tb.queue.Pop() }
func (tb *fifoTable) Insert(s int32)           { tb.inserted[s] = *tb.clock; tb.held = append(tb.held, s) }

func (tb *fifoTable) Hit(s int32) {
	if tb.queue.Remove(s) {
		tb.held = append(tb.held, s)
	}
}

func (tb *fifoTable) Release() {
	for _, s := range tb.held {
		tb.queue.Push(s, plankit.Key{Major: tb.inserted[s]})
	}
	tb.held = tb.held[:0]
}

func (p *fifo) Info(context.Context) (plugin.Info, error) {
	return plankit.Info("fifo", "0.0.1", "first in, first out (a test of the public kit)", plankit.HostFields()), nil
}

func (p *fifo) Needs(_ context.Context, setup plugin.Setup) (cache.Needs, error) {
	var o fifoOptions
	if err := plankit.Decode(setup, &o); err != nil {
		return cache.Needs{}, err
	}
	return cache.Needs{ProfileBatches: o.Profile}, nil
}

func (p *fifo) Configure(_ context.Context, setup plugin.Setup) error {
	var o fifoOptions
	if err := plankit.Decode(setup, &o); err != nil {
		return err
	}
	tables, err := plankit.PerTable(o.Capacity, setup.Tables, func(_ int, c int32) *fifoTable {
		return &fifoTable{Slots: plankit.NewSlots(c), queue: plankit.NewSlotHeap(c), inserted: make([]uint64, c), clock: &p.clock}
	})
	if err != nil {
		return err
	}
	p.Guard.Configure(setup.Tables, func() { p.tables, p.clock = tables, 0 })
	return nil
}

func (p *fifo) Plan(_ context.Context, req *cache.PlanRequest) (*cache.PlanResult, error) {
	return p.Guard.Plan("fifo", req, func(b *cache.Batch) (*cache.PlanResult, error) {
		return plankit.TwoPass(b, p.tables), nil
	})
}

// A policy added through the public API alone passes the conformance suite
// and declares its Needs across the wire, bad options with their key.
func TestThrowawayPolicy(t *testing.T) {
	newFIFO := func() cache.Cache { return &fifo{} }
	cachetest.Run(t, newFIFO)
	cachetest.Run(t, newFIFO, cachetest.WithOptions(json.RawMessage(`{"profile_batches": 3}`)))

	c := connect(t, newFIFO())
	setup := plugin.Setup{Tables: []plugin.Table{{Rows: 10, Dim: 4}}, Options: json.RawMessage(`{"capacity": 4, "profile_batches": 3}`)}
	if n, err := cache.NeedsOf(context.Background(), c, setup); err != nil || !reflect.DeepEqual(n, cache.Needs{ProfileBatches: 3}) {
		t.Fatalf("Needs over gRPC = %+v, %v; want ProfileBatches 3", n, err)
	}
	setup.Options = json.RawMessage(`{"capacity": 4, "profile_batches": -1}`)
	_, err := cache.NeedsOf(context.Background(), c, setup)
	if key, _ := plugin.FieldOf(err); key != "profile_batches" || err.Error() != "invalid plugin configuration: profile_batches: must be ≥ 0, got -1" {
		t.Fatalf("Needs with a bad option over gRPC: %v (key %q), want a FieldError for profile_batches", err, key)
	}
	if key, _ := plugin.FieldOf(c.Configure(context.Background(), setup)); key != "profile_batches" {
		t.Fatalf("Configure with a bad option over gRPC: key %q, want profile_batches", key)
	}
}

// A policy that declares nothing answers the zero Needs over the wire, not
// an error.
func TestNeedsOfAPolicyThatDeclaresNothing(t *testing.T) {
	c := connect(t, &cachetest.Mock{})
	n, err := cache.NeedsOf(context.Background(), c, plugin.Setup{Options: json.RawMessage(`{"capacity": 4}`)})
	if err != nil || !reflect.DeepEqual(n, cache.Needs{}) {
		t.Fatalf("Needs = %+v, %v; want the zero Needs", n, err)
	}
}
