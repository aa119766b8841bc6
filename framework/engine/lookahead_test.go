package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
)

// peek is a test stage that looks ahead (stage.Lookahead), as ScratchPipe's
// plan does with its future window, and records what it was shown.
type peekConfig struct {
	Ahead int `mapstructure:"ahead"`
}

func (c *peekConfig) Validate() error { return nil }

type peek struct {
	common
	ahead int
}

func (p *peek) Lookahead() int { return p.ahead }

func (p *peek) ProcessAhead(_ context.Context, b *batch.Batch, next []*batch.Batch) error {
	p.rec.mu.Lock()
	p.rec.past++
	p.rec.maxPast = max(p.rec.maxPast, p.rec.past-p.rec.sunk)
	p.rec.mu.Unlock()
	p.rec.saw(p.name, b.Seq)
	// What the stage was shown with batch b, under its own name.
	for _, n := range next {
		p.rec.saw(fmt.Sprintf("%s:%d", p.name, b.Seq), n.Seq)
	}
	return nil
}

// TestLookaheadSeesFutureBatches: a stage with Lookahead 2 processes every
// batch once, in order, each with the next two batches (fewer at the end),
// in both pipeline modes, and the run ends (no batch is held forever, the
// pool has room for the held batches).
func TestLookaheadSeesFutureBatches(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"pipelined", "sequential"} {
		for _, n := range []int{1, 2, 3, 7} {
			t.Run(fmt.Sprintf("%s/%d", mode, n), func(t *testing.T) {
				e := newEnv(t, "pipeline: "+mode+"\n", fmt.Sprintf(`
  gen: {kind: gen, out: [a], batches: %d}
  peek: {kind: peek, in: a, out: [b], ahead: 2}
  sink: {kind: sink, in: b}
`, n))
				if _, err := e.run(t); err != nil {
					t.Fatal(err)
				}
				if got := e.rec.seen("sink"); !slices.Equal(got, seqs(n)) {
					t.Fatalf("sink saw %v, want %v", got, seqs(n))
				}
				if got := e.rec.seen("peek"); !slices.Equal(got, seqs(n)) {
					t.Fatalf("peek saw %v, want %v", got, seqs(n))
				}
				for b := 0; b < n; b++ {
					var want []uint64
					for s := b + 1; s <= b+2 && s < n; s++ {
						want = append(want, uint64(s))
					}
					if got := e.rec.seen(fmt.Sprintf("peek:%d", b)); !slices.Equal(got, want) {
						t.Errorf("batch %d shown with %v, want %v", b, got, want)
					}
				}
			})
		}
	}
}

// TestSequentialLookaheadOneBatchPast: in a sequential graph the loader runs
// ahead only by the lookahead, and the stage that looks ahead hands on one
// batch at a time — also at the end of the run, when every remaining batch
// is already there and the pool no longer holds it back.
func TestSequentialLookaheadOneBatchPast(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 9} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			e := newEnv(t, "pipeline: sequential\n", fmt.Sprintf(`
  gen: {kind: gen, out: [a], batches: %d}
  peek: {kind: peek, in: a, out: [b], ahead: 2}
  relay: {kind: relay, in: b, out: [c]}
  sink: {kind: sink, in: c, delay_ms: 2}
`, n))
			if _, err := e.run(t); err != nil {
				t.Fatal(err)
			}
			if got := e.rec.seen("sink"); !slices.Equal(got, seqs(n)) {
				t.Fatalf("sink saw %v, want %v", got, seqs(n))
			}
			if m := e.rec.maxPast; m != 1 {
				t.Errorf("%d batches past peek at once, want 1", m)
			}
			if m := e.rec.maxInFlight; m > 3 {
				t.Errorf("%d batches in flight, want at most 3 (one past peek, two held by it)", m)
			}
		})
	}
}

// TestCreditsZeroHandOff: with nats.credits 0 each batch goes straight from
// a stage to the next (no queue), the run completes and still overlaps
// batches, one per stage.
func TestCreditsZeroHandOff(t *testing.T) {
	t.Parallel()
	const n = 30
	e := newEnv(t, "", fmt.Sprintf(`
  gen: {kind: gen, out: [a], batches: %d}
  relay: {kind: relay, in: a, out: [b]}
  sink: {kind: sink, in: b, delay_ms: 2}
`, n))
	e.graph.Config.NATS.Credits = 0
	if _, err := e.run(t); err != nil {
		t.Fatal(err)
	}
	if got := e.rec.seen("sink"); !slices.Equal(got, seqs(n)) {
		t.Fatalf("sink saw %v", got)
	}
	if m := e.rec.maxInFlight; m < 2 || m > len(e.graph.Nodes) {
		t.Errorf("%d batches in flight, want 2 to %d (one per stage, no queues)", m, len(e.graph.Nodes))
	}
}
