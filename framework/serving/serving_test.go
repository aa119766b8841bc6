package serving

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// expDemands is n exponential service times of the given mean (ns),
// from their own seed (not the arrivals').
func expDemands(seed uint64, n int, meanNs float64) []int64 {
	r := rand.New(rand.NewPCG(seed, 99))
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(math.Round(r.ExpFloat64() * meanNs))
	}
	return out
}

// batchMeans is the mean of xs and its standard error by the method of
// batch means: sojourn times of a queue are correlated, so the naive
// σ/√n understates the error; the means of k long consecutive runs are
// nearly independent.
func batchMeans(xs []float64, k int) (mean, se float64) {
	size := len(xs) / k
	var means []float64
	for b := range k {
		s := 0.0
		for _, x := range xs[b*size : (b+1)*size] {
			s += x
		}
		means = append(means, s/float64(size))
		mean += s / float64(size) / float64(k)
	}
	v := 0.0
	for _, m := range means {
		v += (m - mean) * (m - mean)
	}
	return mean, math.Sqrt(v / float64(k-1) / float64(k))
}

// erlangC is the probability that an arrival waits in an M/M/c queue
// with offered load a = λ/μ (Erlang's C formula).
func erlangC(c int, a float64) float64 {
	term, sum := 1.0, 0.0 // a^k/k!
	for k := range c {
		sum += term
		term *= a / float64(k+1)
	}
	last := term * float64(c) / (float64(c) - a)
	return last / (sum + last)
}

// mmc replays n Poisson arrivals at qps through one stage of c servers
// with exponential service of mean meanNs, and returns the mean sojourn
// time and its standard error, in ns.
func mmc(t *testing.T, c int, qps, meanNs float64, n int) (mean, se float64) {
	t.Helper()
	net := &Network{
		Stages:  []Stage{{Name: "s", Demand: expDemands(7, n, meanNs), Resources: []string{"cpu"}}},
		Servers: map[string]int{"cpu": c},
	}
	rp, err := net.Replay(Scale(UnitArrivals(3, n), qps), qps)
	if err != nil {
		t.Fatal(err)
	}
	lat := make([]float64, n)
	for i := range lat {
		lat[i] = rp.Completion[i] - rp.Arrival[i]
	}
	return batchMeans(lat, 20)
}

// The tolerance of the queueing checks: the replay's mean sojourn time
// over 200,000 queries (fixed seeds) is within 4 standard errors of the
// formula, the standard error estimated by 20 batch means (a 4σ band
// fails a correct queue about once in 16,000 seeds, and the seeds are
// fixed, so it never flakes). The error must itself be under 2% of the
// formula, so the check could catch a queue that is off by a few
// percent (one server too many or too few is off by far more).
const (
	queries = 200_000
	sigmas  = 4
	maxRel  = 0.02
)

func checkMean(t *testing.T, what string, got, se, want float64) {
	t.Helper()
	t.Logf("%s: replayed mean sojourn %.4f ms ± %.4f (1 s.e.), formula %.4f ms", what, got/1e6, se/1e6, want/1e6)
	if se/want > maxRel {
		t.Errorf("%s: standard error %.2f%% of the mean: too noisy to check", what, 100*se/want)
	}
	if math.Abs(got-want) > sigmas*se {
		t.Errorf("%s: mean sojourn %.4f ms, M/M formula %.4f ms: %.1f standard errors off", what, got/1e6, want/1e6, math.Abs(got-want)/se)
	}
}

// One server: the mean sojourn time of M/M/1 is 1/(μ−λ).
func TestSingleServerMatchesMM1(t *testing.T) {
	const mu, lambda = 1000.0, 700.0 // per second: 1 ms service, ρ = 0.7
	got, se := mmc(t, 1, lambda, 1e9/mu, queries)
	checkMean(t, "M/M/1 ρ=0.7", got, se, 1e9/(mu-lambda))
}

// c servers: the mean sojourn time of M/M/c is C(c, a)/(cμ−λ) + 1/μ
// (Erlang C), here with c = 4 and c = 64 (RecPipe's CPU, one query per
// core).
func TestMultiServerMatchesMMc(t *testing.T) {
	for _, tc := range []struct {
		c          int
		mu, lambda float64
	}{{4, 250, 800}, {64, 50, 2880}} {
		a := tc.lambda / tc.mu
		want := erlangC(tc.c, a)/(float64(tc.c)*tc.mu-tc.lambda) + 1/tc.mu
		got, se := mmc(t, tc.c, tc.lambda, 1e9/tc.mu, queries)
		checkMean(t, "M/M/c", got, se, want*1e9)
	}
}

// A formula check that could not fail would prove nothing: one server
// fewer than the formula assumes is many standard errors off.
func TestMMcCheckCatchesAWrongServerCount(t *testing.T) {
	const mu, lambda = 250.0, 600.0
	want := erlangC(4, lambda/mu)/(4*mu-lambda) + 1/mu
	got, se := mmc(t, 3, lambda, 1e9/mu, queries)
	if math.Abs(got-want*1e9) <= sigmas*se {
		t.Fatalf("3 servers replayed as 4: %.4f ms vs %.4f ms", got/1e6, want*1e3)
	}
}

// tandem is three stages in a row on resources of 1, 1 and 4 servers,
// the middle one on two devices at once (as a score stage holds the host
// and the GPU), over 50 batches of varied demands.
func tandem() *Network {
	r := rand.New(rand.NewPCG(11, 12))
	d := func(mean float64) []int64 {
		out := make([]int64, 50)
		for i := range out {
			out[i] = int64(mean * (0.2 + 1.6*r.Float64()))
		}
		return out
	}
	mid := d(3e6)
	half := make([]int64, len(mid))
	for i, x := range mid {
		half[i] = x / 2
	}
	return &Network{
		Stages: []Stage{
			{Name: "load", Demand: d(0.2e6), Resources: []string{"host"}},
			{Name: "score", Upstream: []string{"load"}, Demand: mid, Resources: []string{"gpu", "pcie"},
				Holds: map[string][]int64{"pcie": half}},
			{Name: "filter", Upstream: []string{"score"}, Demand: d(10e6), Resources: []string{"cpu"}},
		},
		Servers: map[string]int{"cpu": 4},
	}
}

// With common random numbers (the same uniforms scaled by 1/QPS), every
// query's latency, hence p99, never falls as QPS rises: FIFO queues in
// a row, single-server ones and a multi-server one last, are monotone
// in the inter-arrival times (Lindley's recursion; Kiefer–Wolfowitz for
// c servers). Not every network is: a multi-server queue lets queries
// overtake, and the FIFO queue after it then serves them in an order
// that depends on the load (README, "Monotonicity").
func TestLatencyNeverFallsAsQPSRises(t *testing.T) {
	net := tandem()
	unit := UnitArrivals(5, 20000)
	var prev []float64
	prevP99 := 0.0
	for _, qps := range []float64{20, 50, 100, 150, 200, 250, 300, 330} {
		rp, err := net.Replay(Scale(unit, qps), qps)
		if err != nil {
			t.Fatal(err)
		}
		lat := make([]float64, len(unit))
		for i := range lat {
			lat[i] = rp.Completion[i] - rp.Arrival[i]
			// Arrivals are scaled floats: allow their rounding.
			if prev != nil && lat[i] < prev[i]-1e-6*prev[i] {
				t.Fatalf("query %d: latency %.0f ns at %g QPS, %.0f ns at a lower QPS", i, lat[i], qps, prev[i])
			}
		}
		rep := ModeledReport(rp, Options{QPS: qps})
		p99 := math.Inf(1)
		if rep.LatencyMs != nil {
			p99 = rep.LatencyMs.P99
		}
		t.Logf("%5g QPS: p99 %.3f ms, utilisation %v, overload %v", qps, p99, rep.Utilisation, rep.Overload != nil)
		if p99 < prevP99 {
			t.Fatalf("p99 fell from %.3f to %.3f ms at %g QPS", prevP99, p99, qps)
		}
		prev, prevP99 = lat, p99
	}
}

// At a vanishing load no query waits: its latency is its path's service
// time (every stage's demand in a row here), and queries never finish
// before they arrive plus that.
func TestLatencyAtLowLoadIsServiceTime(t *testing.T) {
	net := tandem()
	rp, err := net.Replay(Scale(UnitArrivals(2, 500), 0.01), 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for q := range rp.Arrival {
		want := 0.0
		for _, s := range net.Stages {
			want += float64(s.Demand[q%50])
		}
		if got := rp.Completion[q] - rp.Arrival[q]; math.Abs(got-want) > 1e-3 {
			t.Fatalf("query %d: latency %.0f ns at 0.01 QPS, its service time %.0f ns", q, got, want)
		}
	}
}

// Offered load at or above what the bottleneck serves (λ ≥ cμ) is
// reported as overload, with no percentiles; just below, as a steady
// state.
func TestOverloadIsReportedNotPercentiles(t *testing.T) {
	net := &Network{
		Stages:  []Stage{{Name: "s", Demand: expDemands(1, 1000, 4e6), Resources: []string{"cpu"}}},
		Servers: map[string]int{"cpu": 4},
	}
	mean := 0.0
	for _, d := range net.Stages[0].Demand {
		mean += float64(d) / 1000 / 1e9
	}
	capacity := 4 / mean // ≈ 1000 QPS
	unit := UnitArrivals(9, 50000)
	for _, tc := range []struct {
		factor   float64
		overload bool
	}{{0.8, false}, {1.0, true}, {1.5, true}} {
		qps := tc.factor * capacity
		rp, err := net.Replay(Scale(unit, qps), qps)
		if err != nil {
			t.Fatal(err)
		}
		rep := ModeledReport(rp, Options{QPS: qps, SLAMs: 20})
		if got := rep.Overload != nil; got != tc.overload {
			t.Fatalf("%.2f× capacity: overload %v, want %v (%+v)", tc.factor, got, tc.overload, rep)
		}
		if math.Abs(rep.CapacityQPS-capacity) > 1e-6*capacity || rep.Bottleneck != "cpu" {
			t.Errorf("capacity %g on %q, want %g on cpu", rep.CapacityQPS, rep.Bottleneck, capacity)
		}
		if tc.overload {
			if rep.LatencyMs != nil || rep.WithinSLA != nil || !strings.Contains(rep.Overload.Reason, "cpu") {
				t.Errorf("overloaded report keeps figures: %+v", rep)
			}
			if o := rep.Overload; tc.factor > 1 && !(o.QueueAtEnd > 2*o.QueueAtHalf && o.QueueAtHalf > 100) {
				t.Errorf("%.2f× capacity: the queue did not grow: %d queries in the system at mid-stream, %d at the end", tc.factor, o.QueueAtHalf, o.QueueAtEnd)
			}
			if tc.factor > 1 && !(rep.AchievedQPS < 0.9*rep.ArrivalQPS && rep.LatencyGrowth > 3) {
				t.Errorf("%.2f× capacity: achieved %g of %g QPS, latency growth %g", tc.factor, rep.AchievedQPS, rep.ArrivalQPS, rep.LatencyGrowth)
			}
			continue
		}
		if rep.LatencyMs == nil || rep.WithinSLA == nil || *rep.WithinSLA <= 0 || *rep.WithinSLA > 1 {
			t.Errorf("steady report lacks figures: %+v", rep)
		}
	}
}

// A measured run that served below the arrival rate is overloaded; one
// that kept up is not.
func TestMeasuredOverload(t *testing.T) {
	arr := Scale(UnitArrivals(4, 200), 100) // 100 QPS for about 2 s
	kept, behind := make([]float64, len(arr)), make([]float64, len(arr))
	free := 0.0
	for i, a := range arr {
		kept[i] = a + 2e6 // 2 ms each, never queued
		free = max(free, a) + 20e6
		behind[i] = free // one server of 20 ms: 50 QPS
	}
	if rep := Measure(arr, kept, Options{QPS: 100, SLAMs: 5}); rep.Overload != nil || rep.LatencyMs == nil || *rep.WithinSLA != 1 {
		t.Errorf("a run that kept up: %+v", rep)
	}
	rep := Measure(arr, behind, Options{QPS: 100})
	if rep.Overload == nil || rep.LatencyMs != nil || math.Abs(rep.AchievedQPS-50)/50 > 0.1 {
		t.Errorf("a run at half the arrival rate: %+v", rep)
	}
}

// Bad networks are refused, naming what is wrong.
func TestReplayRefusesBadNetworks(t *testing.T) {
	for _, tc := range []struct {
		net  Network
		want string
	}{
		{Network{}, "no stages"},
		{Network{Stages: []Stage{{Name: "a", Demand: []int64{1}}, {Name: "b", Demand: []int64{1, 2}}}}, "stage b has demands for 2 batches"},
		{Network{Stages: []Stage{{Name: "a", Demand: []int64{-1}}}}, "negative demand"},
		{Network{Stages: []Stage{{Name: "a", Upstream: []string{"x"}, Demand: []int64{1}}}}, `unknown stage "x"`},
		{Network{Stages: []Stage{{Name: "a", Upstream: []string{"b"}, Demand: []int64{1}}, {Name: "b", Upstream: []string{"a"}, Demand: []int64{1}}}}, "cycle"},
		{Network{Stages: []Stage{{Name: "a", Demand: []int64{1}, Resources: []string{"cpu"}}}, Servers: map[string]int{"cpu": 0}}, "must be ≥ 1"},
		{Network{Stages: []Stage{{Name: "a", Demand: []int64{1}, Holds: map[string][]int64{"gpu": {1}}}}}, `holds "gpu", which is not one of its resources`},
		{Network{Stages: []Stage{{Name: "a", Demand: []int64{1}, Resources: []string{"gpu"}, Holds: map[string][]int64{"gpu": {-1}}}}}, "negative hold"},
	} {
		if _, err := tc.net.Replay([]float64{0, 1}, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.net, err, tc.want)
		}
	}
}

// The arrival stream is the seed's: the same seed, the same stream; its
// rate is the one asked for, within sampling error.
func TestArrivalsArePoissonAndSeeded(t *testing.T) {
	a, b := UnitArrivals(8, 100000), UnitArrivals(8, 100000)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("arrival %d differs between two streams of one seed", i)
		}
	}
	if c := UnitArrivals(9, 10); c[9] == a[9] {
		t.Errorf("seeds 8 and 9 give the same stream")
	}
	// n unit-rate exponentials sum to n ± √n.
	if n := float64(len(a)); math.Abs(a[len(a)-1]-n) > 4*math.Sqrt(n) {
		t.Errorf("100000 unit-rate arrivals span %g", a[len(a)-1])
	}
}

// A pacer's arrivals are its epoch plus the stream's unit epochs over
// QPS, whenever Wait is called; a wait ends when its context does.
func TestPacerArrivals(t *testing.T) {
	const qps = 1e9 // every arrival within a few ns: nothing sleeps long
	p := NewPacer(6, 50, qps)
	unit := UnitArrivals(6, 50)
	first, err := p.Wait(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	epoch := first.Add(-time.Duration(unit[0] * 1e9 / qps))
	for i := 1; i < 50; i++ {
		at, err := p.Wait(context.Background(), i)
		if err != nil {
			t.Fatal(err)
		}
		if want := epoch.Add(time.Duration(unit[i] * 1e9 / qps)); !at.Equal(want) {
			t.Fatalf("arrival %d at %v, want %v", i, at, want)
		}
	}
	if _, err := p.Wait(context.Background(), 50); err == nil {
		t.Error("a 51st arrival from a stream of 50")
	}
	slow := NewPacer(6, 2, 1e-6) // the first arrival is days away
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := slow.Wait(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a wait on a cancelled context: %v", err)
	}
}

// Split makes c servers out of one device: each query holds a server c
// times as long, so capacity is the whole device's (not c times it), and
// an unloaded query takes c times its charged time.
func TestSplitDeviceKeepsItsCapacity(t *testing.T) {
	stage := Stage{Name: "s", Demand: []int64{1e6, 3e6}, Resources: []string{"cpu"}}
	whole := &Network{Stages: []Stage{stage}}
	split := &Network{Stages: []Stage{stage}, Servers: map[string]int{"cpu": 8}, Split: true}
	unit := UnitArrivals(1, 1000)
	a, err := whole.Replay(Scale(unit, 100), 100)
	if err != nil {
		t.Fatal(err)
	}
	b, err := split.Replay(Scale(unit, 100), 100)
	if err != nil {
		t.Fatal(err)
	}
	if a.CapacityQPS != 500 || b.CapacityQPS != 500 || a.Utilisation["cpu"] != b.Utilisation["cpu"] {
		t.Errorf("capacity %g (whole) and %g (split 8 ways), utilisation %v and %v", a.CapacityQPS, b.CapacityQPS, a.Utilisation, b.Utilisation)
	}
	low, err := split.Replay(Scale(unit, 0.001), 0.001)
	if err != nil {
		t.Fatal(err)
	}
	for q := range unit {
		if got, want := low.Completion[q]-low.Arrival[q], float64(8*stage.Demand[q%2]); math.Abs(got-want) > 1e-3 {
			t.Fatalf("query %d: %.0f ns unloaded on 1/8 of the device, want %.0f", q, got, want)
		}
	}
}

// BenchmarkReplay100k replays 100,000 queries through the three-stage
// tandem (go test -bench Replay ./framework/serving).
func BenchmarkReplay100k(b *testing.B) {
	net := tandem()
	arr := Scale(UnitArrivals(1, 100_000), 300)
	for b.Loop() {
		if _, err := net.Replay(arr, 300); err != nil {
			b.Fatal(err)
		}
	}
}

// A device a stage names twice is one resource: a query takes one of its
// servers, not two (score with host_device and compute_device both the
// CPU).
func TestADeviceNamedTwiceIsOneResource(t *testing.T) {
	net := &Network{Stages: []Stage{{Name: "score", Demand: []int64{2e6}, Resources: []string{"cpu", "cpu"}}}}
	rp, err := net.Replay(Scale(UnitArrivals(1, 100), 100), 100)
	if err != nil {
		t.Fatal(err)
	}
	if u := rp.Utilisation["cpu"]; math.Abs(u-0.2) > 1e-9 {
		t.Errorf("utilisation %g at 100 QPS of 2 ms, want 0.2", u)
	}
}
