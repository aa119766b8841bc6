package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
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
// embedded NATS, no tracing) and returns the time from the first batch out
// of the graph to the last, and the number of batches in that interval.
func runTimed(b *testing.B, path string) (time.Duration, int) {
	m := runMeasured(b, path)
	return time.Duration(m.wall * float64(m.batches)), m.batches
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
			pids := []int{os.Getpid()}
			for _, p := range host.Processes() {
				pids = append(pids, p.Pid)
			}
			b.ResetTimer()
			cpu := cpuNanos(pids)
			for range b.N {
				if _, err := dev.Info(ctx); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time of the host and the plugin, which load from
			// elsewhere moves less than it moves wall time.
			b.ReportMetric(float64(cpuNanos(pids)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkOutOfProcess is the measure of the out-of-process
// overhead: for graphs/demo.yaml and graphs/scratchpipe.yaml, each pair runs
// the graph with every plugin linked in and then with every plugin a
// subprocess (builtin:NAME replaced by ../bin/flowrun-KIND-NAME), and
// reports the medians over the pairs of out/in - 1 in wall time and in CPU
// time per batch. Both are taken over the steady state, from the first
// batch out of the graph to the last; CPU time is that of every thread of
// the host and of its plugin processes (/proc/PID/task/*/schedstat, ns).
//
//	go test -run '^$' -bench OutOfProcess -benchtime 5x ./cmd/flowrun/
func BenchmarkOutOfProcess(b *testing.B) {
	for _, g := range []string{"demo", "scratchpipe"} {
		b.Run(g, func(b *testing.B) {
			in := filepath.Join(repoGraphs, g+".yaml")
			out := subprocessGraph(b, in)
			var wall, cpu, inWall, outWall, inCPU, outCPU []float64
			for range b.N {
				a := runMeasured(b, in)
				o := runMeasured(b, out)
				wall = append(wall, o.wall/a.wall-1)
				cpu = append(cpu, o.cpu/a.cpu-1)
				inWall, outWall = append(inWall, a.wall), append(outWall, o.wall)
				inCPU, outCPU = append(inCPU, a.cpu), append(outCPU, o.cpu)
			}
			b.ReportMetric(median(inWall), "in-wall-ns/batch")
			b.ReportMetric(median(outWall), "out-wall-ns/batch")
			b.ReportMetric(median(inCPU), "in-cpu-ns/batch")
			b.ReportMetric(median(outCPU), "out-cpu-ns/batch")
			b.ReportMetric(100*median(wall), "wall-overhead-%")
			b.ReportMetric(100*median(cpu), "cpu-overhead-%")
		})
	}
}

// subprocessGraph writes a copy of the graph at path whose builtin:NAME
// plugins are the binaries scripts/build.sh makes, into a staged graphs
// directory (stagedGraphs), and returns its path.
func subprocessGraph(b *testing.B, path string) string {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	kind := map[string]string{"cache": "cache", "kernel": "kernel", "model": "model"}
	var lines []string
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
			section = strings.TrimSuffix(line, ":")
		}
		if i := strings.Index(line, "plugin: builtin:"); i >= 0 {
			name := strings.TrimSpace(line[i+len("plugin: builtin:"):])
			k, ok := kind[section]
			if section == "devices" {
				k, ok = "device", true
			}
			if !ok {
				b.Fatalf("%s: a builtin plugin under %q", path, section)
			}
			bin := "flowrun-" + k + "-" + name
			needBins(b, bin)
			line = line[:i] + "plugin: ../bin/" + bin
		}
		lines = append(lines, line)
	}
	out := filepath.Join(stagedGraphs(b), "subprocess-"+filepath.Base(path))
	if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		b.Fatal(err)
	}
	return out
}

// measured is one run's steady state per batch (wall and cpu in ns) over
// batches intervals.
type measured struct {
	wall, cpu float64
	batches   int
}

// runMeasured runs the graph at path as runTimed says, and reads the wall
// time and the CPU time (the host's threads and its plugin processes')
// when the first and the last batch leave.
func runMeasured(b *testing.B, path string) measured {
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
	pids := []int{os.Getpid()}
	for _, p := range host.Processes() {
		pids = append(pids, p.Pid)
	}
	if strings.Contains(filepath.Base(path), "subprocess") && len(pids) == 1 {
		b.Fatalf("%s: no plugin process to measure", path)
	}
	var (
		mu                sync.Mutex
		first, last       time.Time
		cpuFirst, cpuLast int64
		done              int
	)
	_, err = engine.Run(context.Background(), engine.Options{
		Graph: g, Stages: stages(), Plugins: host, Bus: conn,
		Progress: func(n, _ int) {
			now, cpu := time.Now(), cpuNanos(pids)
			mu.Lock()
			defer mu.Unlock()
			if n == 1 {
				first, cpuFirst = now, cpu
			}
			last, cpuLast, done = now, cpu, n
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	if done < 2 {
		b.Fatal("fewer than two batches")
	}
	n := float64(done - 1)
	return measured{wall: float64(last.Sub(first).Nanoseconds()) / n, cpu: float64(cpuLast-cpuFirst) / n, batches: done - 1}
}

// cpuNanos is the CPU time of every thread of the processes pids, in ns.
func cpuNanos(pids []int) int64 {
	var sum int64
	for _, pid := range pids {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
		for _, f := range tasks {
			data, err := os.ReadFile(f)
			if err != nil {
				continue // a thread that ended
			}
			if v, err := strconv.ParseInt(strings.Fields(string(data))[0], 10, 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

func median(xs []float64) float64 {
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
