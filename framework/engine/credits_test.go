package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/engine"
)

// TestEdgesHoldExactlyTheirCredits holds the sink inside its first batch
// and counts how far the relay upstream of it gets: with every edge
// queueing nats.credits batches it processes exactly credits+2 (the one
// the sink holds, credits queued on the sink's edge, and the one whose
// publish waits for room), then stops. The batch pool (stages + credits
// buffers) lets the source make one more batch than that, so an edge that
// queued one batch too many would let the relay process it too: the count
// would be credits+3 and the test fails. Counts are read after the source
// has used the whole pool, and then must not move.
func TestEdgesHoldExactlyTheirCredits(t *testing.T) {
	t.Parallel()
	for _, credits := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("credits=%d", credits), func(t *testing.T) {
			t.Parallel()
			const n = 12
			e := newEnv(t, "", fmt.Sprintf(`
  gen: {kind: gen, out: [a], batches: %d}
  relay: {kind: relay, in: a, out: [b]}
  sink: {kind: sink, in: b}
`, n))
			// tinyDataset fixes nats.credits; the engine reads it when
			// the run starts.
			e.graph.Config.NATS.Credits = credits
			e.rec.gate = make(chan struct{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := engine.Run(ctx, e.opts)
				done <- err
			}()
			gated := false
			defer func() { // a failed check ends the run before the test
				if !gated {
					cancel()
					close(e.rec.gate)
					<-done
				}
			}()

			pool := len(e.graph.Nodes) + credits
			want := credits + 2
			deadline := time.Now().Add(10 * time.Second)
			for len(e.rec.seen("gen")) < pool || len(e.rec.seen("relay")) < want {
				if time.Now().After(deadline) {
					t.Fatalf("after 10s the source made %d batches (want the pool's %d) and the relay processed %d (want %d)",
						len(e.rec.seen("gen")), pool, len(e.rec.seen("relay")), want)
				}
				time.Sleep(time.Millisecond)
			}
			// Everything upstream of the sink is now blocked, on a full
			// edge or the empty pool: the counts stay where they are.
			for range 100 {
				if got := len(e.rec.seen("relay")); got != want {
					t.Fatalf("relay processed %d batches while the sink held its first, want exactly %d (credits %d)", got, want, credits)
				}
				if got := len(e.rec.seen("gen")); got != pool {
					t.Fatalf("source made %d batches while the sink held its first, want the pool's %d", got, pool)
				}
				time.Sleep(time.Millisecond)
			}

			close(e.rec.gate)
			gated = true
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := e.rec.seen("sink"); !slices.Equal(got, seqs(n)) {
				t.Errorf("sink saw %v, want 0..%d", got, n-1)
			}
		})
	}
}
