package main

import (
	"context"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/engine"
)

// The cost of running plugins out of process: the demo graph with every
// plugin linked in (graphs/demo.yaml) against the same graph with every
// plugin a go-plugin subprocess (graphs/demo-subprocess.yaml), same dataset
// and seed. Each iteration is one whole run; the metric that matters is
// ns/batch, the steady-state time between two batches leaving the graph
// (first to last batch out, so plugin start-up and the first batch's trip
// through the empty pipeline are not in it). docs/benchmarks.md has the
// figures:
//
//	go test -run '^$' -bench Demo -benchtime 3x ./cmd/flowrun/

func BenchmarkDemoInProcess(b *testing.B) {
	benchDemo(b, demo)
}

func BenchmarkDemoOutOfProcess(b *testing.B) {
	benchDemo(b, filepath.Join(stagedGraphs(b), "demo-subprocess.yaml"))
}

func benchDemo(b *testing.B, path string) {
	var (
		steady  time.Duration
		batches int
	)
	b.ResetTimer()
	for range b.N {
		d, n := runTimed(b, path)
		steady += d
		batches += n
	}
	b.StopTimer()
	if batches == 0 {
		b.Fatal("no batch intervals measured")
	}
	b.ReportMetric(float64(steady.Nanoseconds())/float64(batches), "ns/batch")
}

// BenchmarkDemoOverhead runs the two graphs alternately, one after the
// other in each iteration, so that both see the same machine (load from
// elsewhere drifts between two separate benchmarks), and reports both
// ns/batch and the per-batch overhead of out of process, out/in - 1, in %.
func BenchmarkDemoOverhead(b *testing.B) {
	sub := filepath.Join(stagedGraphs(b), "demo-subprocess.yaml")
	var in, out time.Duration
	var inN, outN int
	b.ResetTimer()
	for range b.N {
		d, n := runTimed(b, demo)
		in, inN = in+d, inN+n
		d, n = runTimed(b, sub)
		out, outN = out+d, outN+n
	}
	b.StopTimer()
	inPer := float64(in.Nanoseconds()) / float64(inN)
	outPer := float64(out.Nanoseconds()) / float64(outN)
	b.ReportMetric(inPer, "in-ns/batch")
	b.ReportMetric(outPer, "out-ns/batch")
	b.ReportMetric(100*(outPer/inPer-1), "overhead-%")
}

// runTimed runs the graph at path as `flowrun run` does (plugin host,
// embedded NATS, a P per stage, no tracing) and returns the time from the first batch out
// of the graph to the last, and the number of batches in that interval.
func runTimed(b *testing.B, path string) (time.Duration, int) {
	b.Helper()
	host, err := newHost(nil, io.Discard, true)
	if err != nil {
		b.Fatal(err)
	}
	defer host.Close()
	g, err := loadGraph(path, nil, host, false)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := bus.StartEmbedded(bus.ServerOptions{Port: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	conn, err := bus.Connect(srv.ClientURL(), srv.Auth())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	defer stageProcs(len(g.Nodes))()

	var (
		mu          sync.Mutex
		first, last time.Time
		done        int
	)
	_, err = engine.Run(context.Background(), engine.Options{
		Graph: g, Stages: stages(), Plugins: host, Bus: conn,
		Progress: func(n, _ int) {
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if n == 1 {
				first = now
			}
			last, done = now, n
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return last.Sub(first), done - 1
}

// BenchmarkPluginCall is one trivial plugin call (a device's Info), in
// process and over go-plugin's gRPC to a subprocess: the fixed price of a
// round trip, which out-of-process plugins pay once per call per batch.
func BenchmarkPluginCall(b *testing.B) {
	for name, ref := range map[string]string{
		"InProcess":    "builtin:hbm",
		"OutOfProcess": needBin(b, "flowrun-device-hbm"),
	} {
		b.Run(name, func(b *testing.B) {
			host, err := newHost(nil, io.Discard, true)
			if err != nil {
				b.Fatal(err)
			}
			defer host.Close()
			ctx := context.Background()
			dev, err := host.Device(ctx, ref)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := dev.Info(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
