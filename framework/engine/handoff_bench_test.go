package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/engine"
)

// BenchmarkHandOff measures what one stage hand-off costs the engine: a
// sequential graph of a source, k relays and a sink, run with k = 0 and
// k = 8. The difference per batch, less the relays' own work, divided by
// 8 is one hop — the publish, the ack, the receive, the batch header's
// encoding and decoding, the stage's span and its bookkeeping. Each relay
// computes work_us per batch (0, or 2 ms as a real stage would), because a
// hop after real work also pays for waking an idle core.
//
// Both transports to the embedded server run in one loop, alternated:
// "tcp" (a loopback socket, as an external client) and "inproc" (the
// in-memory pipe flowrun uses for its own embedded server). The metrics
// are ns/hop for each and their ratio.
func BenchmarkHandOff(b *testing.B) {
	for _, workUs := range []int{0, 2000} {
		b.Run(fmt.Sprintf("work=%dus", workUs), func(b *testing.B) {
			const batches, relays = 60, 8
			var short, long [2]time.Duration
			for i := 0; i < b.N; i++ {
				for t, inproc := range []bool{false, true} {
					short[t] += handOffRun(b, inproc, batches, 0, workUs)
					long[t] += handOffRun(b, inproc, batches, relays, workUs)
				}
			}
			var hop [2]float64
			for t := range hop {
				hop[t] = float64(long[t]-short[t])/float64(b.N)/batches/relays - float64(workUs*1000)
			}
			b.ReportMetric(hop[0], "ns/hop-tcp")
			b.ReportMetric(hop[1], "ns/hop-inproc")
			b.ReportMetric(hop[1]/hop[0], "inproc/tcp")
		})
	}
}

func handOffRun(b *testing.B, inproc bool, batches, relays, workUs int) time.Duration {
	var sb strings.Builder
	prev := "r0"
	fmt.Fprintf(&sb, "  gen: {kind: gen, out: [r0], batches: %d}\n", batches)
	for i := 0; i < relays; i++ {
		next := fmt.Sprintf("r%d", i+1)
		fmt.Fprintf(&sb, "  relay%d: {kind: relay, in: %s, out: [%s], work_us: %d}\n", i, prev, next, workUs)
		prev = next
	}
	fmt.Fprintf(&sb, "  end: {kind: sink, in: %s}\n", prev)
	e := newEnv(b, "pipeline: sequential\n", sb.String())
	e.opts.TracerProvider = nil
	e.opts.Bus = busConn(b, inproc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := engine.Run(ctx, e.opts); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// busConn connects to a new embedded server over a loopback socket or the
// in-process pipe.
func busConn(b *testing.B, inproc bool) *bus.Conn {
	srv, err := bus.StartEmbedded(bus.ServerOptions{Port: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	opts := []bus.Option{srv.Auth()}
	if inproc {
		opts = append(opts, srv.InProcess())
	}
	c, err := bus.Connect(srv.ClientURL(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}
