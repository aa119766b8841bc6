package clock

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// chain makes a linear pipeline of stages named s0, s1, … with constant
// durations d[k] over n batches.
func chain(n int, d ...int64) ([]StageSpec, [][]int64) {
	var stages []StageSpec
	var durs [][]int64
	for k, dk := range d {
		st := StageSpec{Name: fmt.Sprintf("s%d", k)}
		if k > 0 {
			st.Upstream = []string{fmt.Sprintf("s%d", k-1)}
		}
		stages = append(stages, st)
		row := make([]int64, n)
		for b := range row {
			row[b] = dk
		}
		durs = append(durs, row)
	}
	return stages, durs
}

func mustSchedule(t *testing.T, s Scheduler, stages []StageSpec, durs [][]int64) *Timeline {
	t.Helper()
	tl, err := s.Schedule(stages, durs)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(tl); err != nil {
		t.Fatal(err)
	}
	return tl
}

// A 3-stage pipeline of 2, 5 and 3 ns over 4 batches: the first batch
// takes 10, then one leaves every 5 (the slowest stage): 10 + 3·5 = 25.
func TestChainPipelined(t *testing.T) {
	stages, durs := chain(4, 2, 5, 3)
	tl := mustSchedule(t, Scheduler{}, stages, durs)
	want := struct{ start, end [][]int64 }{
		[][]int64{{0, 2, 4, 6}, {2, 7, 12, 17}, {7, 12, 17, 22}},
		[][]int64{{2, 4, 6, 8}, {7, 12, 17, 22}, {10, 15, 20, 25}},
	}
	if !reflect.DeepEqual(tl.Start, want.start) || !reflect.DeepEqual(tl.End, want.end) {
		t.Fatalf("start %v end %v, want %v %v", tl.Start, tl.End, want.start, want.end)
	}
	if tl.Makespan() != 25 || tl.SteadyIteration() != 5 || tl.MeanIteration() != 6.25 {
		t.Fatalf("makespan %d steady %g mean %g", tl.Makespan(), tl.SteadyIteration(), tl.MeanIteration())
	}
	if tl.Latency(3) != 19 || tl.Latency(0) != 10 {
		t.Fatalf("latency %d, %d: batch 3 waits 6 ns before s1", tl.Latency(0), tl.Latency(3))
	}
	if name, busy := tl.Bottleneck(); name != "s1" || busy != 20 || tl.Utilisation(1) != 0.8 || tl.BoundIteration() != 5 {
		t.Fatalf("bottleneck %s busy %d util %g bound %g", name, busy, tl.Utilisation(1), tl.BoundIteration())
	}
}

func TestChainSequential(t *testing.T) {
	stages, durs := chain(4, 2, 5, 3)
	tl := mustSchedule(t, Scheduler{Mode: Sequential}, stages, durs)
	if tl.Makespan() != 40 || tl.SteadyIteration() != 10 || tl.Depth != 1 {
		t.Fatalf("makespan %d steady %g depth %d, want 40, 10, 1", tl.Makespan(), tl.SteadyIteration(), tl.Depth)
	}
	for b := 1; b < 4; b++ {
		if tl.Start[0][b] != tl.End[2][b-1] {
			t.Fatalf("batch %d entered at %d, batch %d left at %d", b, tl.Start[0][b], b-1, tl.End[2][b-1])
		}
	}
	// Pipelined with depth 1 is the same schedule.
	if d1 := mustSchedule(t, Scheduler{Depth: 1}, stages, durs); !reflect.DeepEqual(d1.Start, tl.Start) {
		t.Fatalf("depth 1 %v, sequential %v", d1.Start, tl.Start)
	}
}

// Constant stage times, no shared resource: makespan = Σd + (n−1)·max d
// pipelined, n·Σd sequential, whatever the chain.
func TestChainFormula(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		K, n := 1+r.IntN(7), 1+r.IntN(30)
		d := make([]int64, K)
		var sum, mx int64
		for k := range d {
			d[k] = int64(r.IntN(1000))
			sum += d[k]
			mx = max(mx, d[k])
		}
		stages, durs := chain(n, d...)
		p := mustSchedule(t, Scheduler{}, stages, durs)
		s := mustSchedule(t, Scheduler{Mode: Sequential}, stages, durs)
		if p.Makespan() != sum+int64(n-1)*mx || s.Makespan() != int64(n)*sum {
			t.Fatalf("d=%v n=%d: pipelined %d (want %d), sequential %d (want %d)", d, n, p.Makespan(), sum+int64(n-1)*mx, s.Makespan(), int64(n)*sum)
		}
		if n > 1 && (p.SteadyIteration() != float64(mx) || s.SteadyIteration() != float64(sum)) {
			t.Fatalf("d=%v n=%d: steady %g / %g, want %d / %d", d, n, p.SteadyIteration(), s.SteadyIteration(), mx, sum)
		}
	}
}

// Stages a (2), b (1), c (2) where a and c share the link: the link
// serialises them, and whoever has waited longest gets it (then the older
// batch). Worked by hand:
//
//	a0 [0,2)  b0 [2,3)   a1 [2,4)
//	c0 [4,6)   (ready at 3, before b1 and a2 at 4)
//	b1 [4,5)  a2 [6,8)   (ready at 4, before c1 at 6)
//	b2 [8,9)  c1 [8,10)  c2 [10,12)
//
// The link is busy all 12 ns: no schedule is shorter.
func TestSharedResource(t *testing.T) {
	stages, durs := chain(3, 2, 1, 2)
	stages[0].Resources = []string{"link"}
	stages[2].Resources = []string{"link", "gpu"}
	tl := mustSchedule(t, Scheduler{}, stages, durs)
	wantStart := [][]int64{{0, 2, 6}, {2, 4, 8}, {4, 8, 10}}
	if !reflect.DeepEqual(tl.Start, wantStart) {
		t.Fatalf("start %v, want %v", tl.Start, wantStart)
	}
	if tl.Makespan() != 12 || tl.ResourceBusy("link") != 12 || tl.ResourceBusy("gpu") != 6 {
		t.Fatalf("makespan %d, link busy %d, gpu busy %d", tl.Makespan(), tl.ResourceBusy("link"), tl.ResourceBusy("gpu"))
	}
	// Without the sharing it is 5 + 2·2 = 9.
	stages[0].Resources = nil
	if free := mustSchedule(t, Scheduler{}, stages, durs); free.Makespan() != 9 {
		t.Fatalf("unshared makespan %d, want 9", free.Makespan())
	}
	if got := tl.Resources(); !reflect.DeepEqual(got, []string{"link", "gpu"}) {
		t.Fatalf("resources %v", got)
	}
}

// Two stages on one resource and nothing else: the resource is the
// bottleneck, n·(d0+d1) whatever the overlap the graph would allow.
func TestSharedResourceSerialises(t *testing.T) {
	stages, durs := chain(10, 3, 4)
	stages[0].Resources, stages[1].Resources = []string{"host"}, []string{"host"}
	tl := mustSchedule(t, Scheduler{}, stages, durs)
	if name, _ := tl.Bottleneck(); tl.Makespan() != 70 || tl.ResourceBusy("host") != 70 || name != "host" || tl.BoundIteration() != 7 {
		t.Fatalf("makespan %d, busy %d, want 70", tl.Makespan(), tl.ResourceBusy("host"))
	}
	if s := tl.Summary(); s.Resources[0] != (Usage{"host", 70, 1}) {
		t.Fatalf("summary %+v", s)
	}
}

// ScratchPipe's shape in small: collect spends 10 on the host and 1 on the
// GPU at once, train 10 on the GPU and nothing on the host, though both
// name both devices. Held for their whole times the two serialise (20 a
// batch); held for what they charge, the GPU is the bottleneck at 11.
func TestHolds(t *testing.T) {
	const n = 40
	stages, durs := chain(n, 10, 10)
	for k := range stages {
		stages[k].Resources = []string{"host", "gpu"}
	}
	whole := mustSchedule(t, Scheduler{}, stages, durs)
	if got := whole.SteadyIteration(); got != 20 {
		t.Fatalf("whole holds: steady iteration %v, want 20", got)
	}
	fill := func(v int64) []int64 {
		h := make([]int64, n)
		for b := range h {
			h[b] = v
		}
		return h
	}
	stages[0].Holds = map[string][]int64{"host": fill(10), "gpu": fill(1)}
	stages[1].Holds = map[string][]int64{"host": fill(0), "gpu": fill(10)}
	tl := mustSchedule(t, Scheduler{}, stages, durs)
	if tl.ResourceBusy("gpu") != 11*n || tl.ResourceBusy("host") != 10*n {
		t.Fatalf("busy gpu %d host %d, want %d and %d", tl.ResourceBusy("gpu"), tl.ResourceBusy("host"), 11*n, 10*n)
	}
	if name, _ := tl.Bottleneck(); name != "gpu" || tl.BoundIteration() != 11 {
		t.Fatalf("bottleneck %s at %v, want gpu at 11", name, tl.BoundIteration())
	}
	if got := tl.SteadyIteration(); got < 11 || got > 11.5 {
		t.Fatalf("steady iteration %v, want 11 (the GPU's share)\n%s", got, tl.Gantt(120))
	}
}

// A diamond: src (1) feeds x (3) and y (2), which both feed sink (1).
func TestDiamond(t *testing.T) {
	stages := []StageSpec{
		{Name: "src"},
		{Name: "x", Upstream: []string{"src"}},
		{Name: "y", Upstream: []string{"src"}},
		{Name: "sink", Upstream: []string{"x", "y"}},
	}
	durs := [][]int64{{1, 1}, {3, 3}, {2, 2}, {1, 1}}
	tl := mustSchedule(t, Scheduler{}, stages, durs)
	want := [][]int64{{0, 1}, {1, 4}, {1, 3}, {4, 7}}
	if !reflect.DeepEqual(tl.Start, want) || tl.Makespan() != 8 || tl.SteadyIteration() != 3 {
		t.Fatalf("start %v makespan %d steady %g", tl.Start, tl.Makespan(), tl.SteadyIteration())
	}
	// The stages may be listed in any order.
	rev := []StageSpec{stages[3], stages[2], stages[1], stages[0]}
	rd := [][]int64{durs[3], durs[2], durs[1], durs[0]}
	if r := mustSchedule(t, Scheduler{}, rev, rd); r.Makespan() != 8 || r.End[0][1] != 8 {
		t.Fatalf("reversed: makespan %d", r.Makespan())
	}
}

// ScratchPipe's plan sees its future window: plan of batch b waits for
// b+1 and b+2 to be loaded.
func TestLookahead(t *testing.T) {
	stages, durs := chain(4, 1, 1, 1)
	stages[1].Lookahead = 2
	tl := mustSchedule(t, Scheduler{}, stages, durs)
	// load 0..3 at 0..3; plan b needs load min(b+2, 3): ready 3, 4, 5, 6.
	if want := []int64{3, 4, 5, 6}; !reflect.DeepEqual(tl.Start[1], want) || tl.Makespan() != 8 {
		t.Fatalf("plan starts %v, want %v; makespan %d", tl.Start[1], want, tl.Makespan())
	}

	// Sequential with a lookahead of 2 admits 3 batches (the runtime's
	// 1 + lookahead buffers): the loader runs ahead, but past plan one
	// batch at a time, save at the end where the window shrinks.
	stages, durs = chain(12, 1, 2, 3)
	stages[1].Lookahead = 2
	tl = mustSchedule(t, Scheduler{Mode: Sequential}, stages, durs)
	if tl.Depth != 3 {
		t.Fatalf("depth %d, want 3", tl.Depth)
	}
	for b := 1; b < 12-2; b++ {
		if tl.Start[1][b] < tl.End[2][b-1] {
			t.Fatalf("plan of batch %d at %d before batch %d left train at %d", b, tl.Start[1][b], b-1, tl.End[2][b-1])
		}
	}
}

func TestDeadlock(t *testing.T) {
	stages, durs := chain(5, 1, 1, 1)
	stages[1].Lookahead = 2
	_, err := Scheduler{Depth: 2}.Schedule(stages, durs)
	if !errors.Is(err, ErrDeadlock) || !strings.Contains(err.Error(), "stage s1 batch 0") {
		t.Fatalf("depth 2 with lookahead 2: %v", err)
	}
	if _, err := (Scheduler{Depth: 3}).Schedule(stages, durs); err != nil {
		t.Fatalf("depth 3: %v", err)
	}
}

func TestRejects(t *testing.T) {
	stages, durs := chain(2, 1, 1)
	for name, tc := range map[string]struct {
		stages []StageSpec
		durs   [][]int64
		s      Scheduler
		msg    string
	}{
		"no stages":     {nil, nil, Scheduler{}, "no stages"},
		"unnamed":       {[]StageSpec{{}}, [][]int64{{1}}, Scheduler{}, "no name"},
		"duplicate":     {[]StageSpec{{Name: "a"}, {Name: "a"}}, [][]int64{{1}, {1}}, Scheduler{}, "twice"},
		"dangling":      {[]StageSpec{{Name: "a", Upstream: []string{"b"}}}, [][]int64{{1}}, Scheduler{}, `upstream "b"`},
		"self":          {[]StageSpec{{Name: "a", Upstream: []string{"a"}}}, [][]int64{{1}}, Scheduler{}, "its own upstream"},
		"cycle":         {[]StageSpec{{Name: "s"}, {Name: "a", Upstream: []string{"s", "b"}}, {Name: "b", Upstream: []string{"a"}}}, [][]int64{{1}, {1}, {1}}, Scheduler{}, "a, b form a cycle"},
		"source ahead":  {[]StageSpec{{Name: "a", Lookahead: 1}}, [][]int64{{1}}, Scheduler{}, "lookahead without"},
		"neg lookahead": {[]StageSpec{{Name: "a", Lookahead: -1}}, [][]int64{{1}}, Scheduler{}, "lookahead -1"},
		"holds":         {[]StageSpec{{Name: "a", Resources: []string{"gpu"}, Holds: map[string][]int64{"host": {1}}}}, [][]int64{{1}}, Scheduler{}, `holds "host", which is not`},
		"neg hold":      {[]StageSpec{{Name: "a", Resources: []string{"gpu"}, Holds: map[string][]int64{"gpu": {-1}}}}, [][]int64{{1}}, Scheduler{}, "negative hold"},
		"empty res":     {[]StageSpec{{Name: "a", Resources: []string{""}}}, [][]int64{{1}}, Scheduler{}, "empty resource"},
		"rows":          {stages, durs[:1], Scheduler{}, "durations for 1"},
		"ragged":        {stages, [][]int64{{1, 1}, {1}}, Scheduler{}, "for 1"},
		"negative":      {stages, [][]int64{{1, 1}, {1, -2}}, Scheduler{}, "stage s1 batch 1: negative"},
		"mode":          {stages, durs, Scheduler{Mode: 7}, "unknown mode"},
		"depth":         {stages, durs, Scheduler{Depth: -1}, "depth -1"},
	} {
		if _, err := tc.s.Schedule(tc.stages, tc.durs); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.msg)
		}
	}
}

func TestEmpty(t *testing.T) {
	stages, durs := chain(0, 1, 1)
	tl := mustSchedule(t, Scheduler{}, stages, durs)
	if tl.Makespan() != 0 || tl.SteadyIteration() != 0 || tl.MeanIteration() != 0 || tl.Utilisation(0) != 0 {
		t.Fatal("an empty run has no time")
	}
	if !strings.HasPrefix(tl.Gantt(20), "modeled timeline (pipelined), 0 batches") {
		t.Fatalf("%q", tl.Gantt(20))
	}
	stages, durs = chain(1, 4, 6)
	one := mustSchedule(t, Scheduler{}, stages, durs)
	if one.SteadyIteration() != 10 {
		t.Fatalf("one batch: steady %g, want the makespan 10", one.SteadyIteration())
	}
}

func TestGantt(t *testing.T) {
	stages, durs := chain(4, 2, 5, 3)
	stages[1].Resources = []string{"gpu"}
	stages[2].Resources = []string{"gpu"}
	tl := mustSchedule(t, Scheduler{}, stages, durs)
	got := tl.Gantt(34)
	want := "modeled timeline (pipelined), 4 batches, makespan 34ns, steady iteration 8ns (bound 8ns), one column = 1ns\n" +
		"s0    |00112233..........................|\n" +
		"s1    |..00000...11111...22222...33333...|\n" +
		"s2    |.......000.....111.....222.....333|\n" +
		"[gpu] |..11111222111112221111122211111222|\n"
	if got != want {
		t.Fatalf("gantt\n%s\nwant\n%s", got, want)
	}
	if !strings.HasPrefix(tl.String(), "s0\t0\t0\t2\ns0\t1\t2\t4\n") {
		t.Fatalf("dump %q", tl.String())
	}
}

// Random DAGs with random shared resources, holds, lookaheads and depths:
// every schedule meets every dependency and never overlaps two operations
// on a resource (verify). A graph whose Sequential schedule comes out
// faster than its unbounded pipelined one is logged, not failed: greedy
// list scheduling with shared resources does not rule it out.
func TestRandomGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		K, n := 1+r.IntN(6), r.IntN(12)
		var stages []StageSpec
		durs := make([][]int64, K)
		lookahead := 0
		for k := range K {
			st := StageSpec{Name: fmt.Sprintf("s%d", k)}
			for j := range k {
				if r.IntN(3) == 0 || j == k-1 && r.IntN(2) == 0 {
					st.Upstream = append(st.Upstream, fmt.Sprintf("s%d", j))
				}
			}
			for _, res := range []string{"host", "gpu", "pcie"} {
				if r.IntN(3) == 0 {
					st.Resources = append(st.Resources, res)
					if r.IntN(2) == 0 {
						if st.Holds == nil {
							st.Holds = map[string][]int64{}
						}
						h := make([]int64, n)
						for b := range h {
							h[b] = int64(r.IntN(60))
						}
						st.Holds[res] = h
					}
				}
			}
			if len(st.Upstream) > 0 && r.IntN(4) == 0 {
				st.Lookahead = r.IntN(3)
				lookahead += st.Lookahead
			}
			stages = append(stages, st)
			durs[k] = make([]int64, n)
			for b := range durs[k] {
				durs[k][b] = int64(r.IntN(50))
			}
		}
		// Shuffle the listing: the schedule must not depend on it.
		r.Shuffle(K, func(a, b int) { stages[a], stages[b] = stages[b], stages[a]; durs[a], durs[b] = durs[b], durs[a] })
		depth := 0
		if r.IntN(2) == 0 {
			depth = 1 + lookahead + r.IntN(3)
		}
		p, err := Scheduler{Depth: depth}.Schedule(stages, durs)
		if err != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
		s, err := Scheduler{Mode: Sequential}.Schedule(stages, durs)
		if err != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
		for _, tl := range []*Timeline{p, s} {
			if err := verify(tl); err != nil {
				t.Fatalf("graph %d (%s):\n%v\n%s", i, tl.Mode, err, tl)
			}
		}
		if s.Makespan() < p.Makespan() && depth == 0 {
			// Not a theorem for greedy list scheduling with shared
			// resources in general, but these graphs should not show it.
			t.Logf("graph %d: sequential %d < pipelined %d", i, s.Makespan(), p.Makespan())
		}
	}
}

// verify checks a timeline against its definition: every operation
// lasts its duration, starts after each of its dependencies ended, and no
// two operations on one resource overlap.
func verify(tl *Timeline) error {
	for k := range tl.Stages {
		for b := range tl.Batches {
			short := tl.End[k][b]-tl.Start[k][b] < tl.Durations[k][b]
			if len(tl.Stages[k].Holds) == 0 && tl.End[k][b]-tl.Start[k][b] != tl.Durations[k][b] || short || tl.Start[k][b] < 0 {
				return fmt.Errorf("%s batch %d: [%d, %d) for duration %d", tl.Stages[k].Name, b, tl.Start[k][b], tl.End[k][b], tl.Durations[k][b])
			}
			var err error
			tl.deps(op{k, b}, func(d op) {
				if err == nil && tl.End[d.k][d.b] > tl.Start[k][b] {
					err = fmt.Errorf("%s batch %d starts at %d before %s batch %d ends at %d",
						tl.Stages[k].Name, b, tl.Start[k][b], tl.Stages[d.k].Name, d.b, tl.End[d.k][d.b])
				}
			})
			if err != nil {
				return err
			}
		}
	}
	for r := range tl.g.resources {
		type iv struct {
			lo, hi int64
			what   string
		}
		var ivs []iv
		var err error
		tl.holdsOf(r, func(k, b int, at, h int64) {
			if err == nil && (at < tl.Start[k][b] || at+h > tl.End[k][b]) {
				err = fmt.Errorf("%s batch %d holds %s [%d, %d) outside [%d, %d)", tl.Stages[k].Name, b, tl.g.resources[r], at, at+h, tl.Start[k][b], tl.End[k][b])
			}
			ivs = append(ivs, iv{at, at + h, fmt.Sprintf("%s batch %d", tl.Stages[k].Name, b)})
		})
		if err != nil {
			return err
		}
		for i := range ivs {
			for j := i + 1; j < len(ivs); j++ {
				if ivs[i].lo < ivs[j].hi && ivs[j].lo < ivs[i].hi {
					return fmt.Errorf("resource %s: %s [%d, %d) overlaps %s [%d, %d)", tl.g.resources[r], ivs[i].what, ivs[i].lo, ivs[i].hi, ivs[j].what, ivs[j].lo, ivs[j].hi)
				}
			}
		}
	}
	return nil
}

// BenchmarkSchedule schedules ScratchPipe's six stages, two sharing the
// GPU, over 10000 batches with the runtime's pool.
func BenchmarkSchedule(b *testing.B) {
	const n = 10000
	r := rand.New(rand.NewPCG(5, 6))
	stages, durs := chain(n, 1, 1, 1, 1, 1, 1)
	stages[1].Resources, stages[5].Resources = []string{"gpu"}, []string{"gpu"}
	stages[1].Lookahead = 2
	for k := range durs {
		for i := range durs[k] {
			durs[k][i] = int64(1000 + r.IntN(9000))
		}
	}
	for b.Loop() {
		if _, err := (Scheduler{Depth: 10}).Schedule(stages, durs); err != nil {
			b.Fatal(err)
		}
	}
}
