package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/telemetry"
)

// The end-to-end trace test against a real Jaeger v2. It needs the binary
// scripts/jaeger.sh install builds: scripts/test.sh (and so .ci/run) installs
// it, exports FLOWRUN_JAEGER with its path and FLOWRUN_JAEGER_E2E=1. With
// FLOWRUN_JAEGER_E2E=1 a missing binary, or one that does not start, fails
// the test; without it the test is skipped.

// jaegerScript writes the Jaeger configuration the test runs, the same one
// `scripts/jaeger.sh start` runs.
const jaegerScript = "../../scripts/jaeger.sh"

// TestJaegerTrace runs the demo graph exporting OTLP (gRPC, then HTTP) to a
// Jaeger started for the test, finds the run's trace through Jaeger's HTTP
// API by the run id, and checks it (see checkJaegerTrace).
func TestJaegerTrace(t *testing.T) {
	t.Parallel()
	j := startJaeger(t, needJaeger(t))
	for _, tc := range []struct{ name, spec string }{
		{"otlp-grpc", "otlp-grpc://" + j.otlpGRPC},
		{"otlp-http", "otlp-http://" + j.otlpHTTP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			checkJaegerTrace(t, j, demo, tc.spec)
			t.Logf("run, export and query: %s", time.Since(start).Round(time.Millisecond))
		})
	}
}

// needJaeger returns the Jaeger binary named by FLOWRUN_JAEGER, skipping the
// test unless FLOWRUN_JAEGER_E2E=1 and failing it when that is set but the
// binary is not there.
func needJaeger(t *testing.T) string {
	t.Helper()
	if os.Getenv("FLOWRUN_JAEGER_E2E") != "1" {
		t.Skip("FLOWRUN_JAEGER_E2E is not 1 (scripts/test.sh sets it after scripts/jaeger.sh install)")
	}
	bin := os.Getenv("FLOWRUN_JAEGER")
	if bin == "" {
		t.Fatal("FLOWRUN_JAEGER_E2E=1 but FLOWRUN_JAEGER is not set: run scripts/jaeger.sh install and export FLOWRUN_JAEGER=<the path it prints>")
	}
	st, err := os.Stat(bin)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		t.Fatalf("FLOWRUN_JAEGER_E2E=1 but FLOWRUN_JAEGER=%s is not an executable file (%v): run scripts/jaeger.sh install", bin, err)
	}
	return bin
}

// jaeger is a Jaeger instance the test started: its endpoints, host:port.
type jaeger struct {
	otlpGRPC, otlpHTTP, query string
}

// startJaeger runs bin on free loopback ports with scripts/jaeger.sh's
// configuration and returns once its OTLP receivers and query API answer.
// Cleanup stops it.
func startJaeger(t *testing.T, bin string) *jaeger {
	t.Helper()
	ports := freePorts(t, 4)
	dir := t.TempDir()
	cmd := exec.Command("bash", jaegerScript, "config")
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("JAEGER_OTLP_GRPC_PORT=%d", ports[0]),
		fmt.Sprintf("JAEGER_OTLP_HTTP_PORT=%d", ports[1]),
		fmt.Sprintf("JAEGER_QUERY_HTTP_PORT=%d", ports[2]),
		fmt.Sprintf("JAEGER_QUERY_GRPC_PORT=%d", ports[3]))
	yaml, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s config: %v", jaegerScript, err)
	}
	cfgFile := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfgFile, yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "jaeger.log"))
	if err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(bin, "--config", "file:"+cfgFile)
	srv.Stdout, srv.Stderr = logFile, logFile
	if err := srv.Start(); err != nil {
		t.Fatalf("FLOWRUN_JAEGER_E2E=1 but Jaeger %s does not start: %v", bin, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = srv.Wait(); logFile.Close(); close(exited) }()
	logTail := func() string {
		data, _ := os.ReadFile(logFile.Name())
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		return string(data)
	}
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
			<-exited
		}
	})

	j := &jaeger{
		otlpGRPC: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		otlpHTTP: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		query:    fmt.Sprintf("127.0.0.1:%d", ports[2]),
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, addr := range []string{j.query, j.otlpGRPC, j.otlpHTTP} {
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				t.Fatalf("FLOWRUN_JAEGER_E2E=1 but Jaeger %s exited during start-up (%v); log:\n%s", bin, waitErr, logTail())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("FLOWRUN_JAEGER_E2E=1 but Jaeger %s did not listen on %s within 60s; log:\n%s", bin, addr, logTail())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := j.get("/api/services", nil); err != nil {
		t.Fatalf("Jaeger's query API: %v; log:\n%s", err, logTail())
	}
	return j
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// get fetches path from Jaeger's HTTP API (the v1 JSON API its UI uses) and
// decodes the response's data into v.
func (j *jaeger) get(path string, v any) error {
	resp, err := http.Get("http://" + j.query + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Msg string `json:"msg"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("GET %s: %s", path, r.Errors[0].Msg)
	}
	if v == nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(r.Data))
	d.UseNumber()
	return d.Decode(v)
}

// v3Spans counts the spans of a trace as Jaeger's v3 API (OTLP JSON)
// returns it.
func (j *jaeger) v3Spans(traceID string) (int, error) {
	resp, err := http.Get("http://" + j.query + "/api/v3/traces/" + traceID)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s", resp.Status)
	}
	var r struct {
		Result struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []json.RawMessage `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	n := 0
	for _, rs := range r.Result.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	return n, nil
}

// jTrace, jSpan, jTag and jProcess are what the test reads of Jaeger's v1
// JSON trace model.
type jTrace struct {
	TraceID   string              `json:"traceID"`
	Spans     []*jSpan            `json:"spans"`
	Processes map[string]jProcess `json:"processes"`
}

type jSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags      []jTag `json:"tags"`
	ProcessID string `json:"processID"`
}

type jTag struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type jProcess struct {
	ServiceName string `json:"serviceName"`
	Tags        []jTag `json:"tags"`
}

func tagOf(tags []jTag, key string) (any, bool) {
	for _, tg := range tags {
		if tg.Key == key {
			return tg.Value, true
		}
	}
	return nil, false
}

func (s *jSpan) tag(key string) (any, bool) { return tagOf(s.Tags, key) }

func (s *jSpan) str(key string) string {
	v, _ := s.tag(key)
	str, _ := v.(string)
	return str
}

func (s *jSpan) int(key string) (int64, bool) {
	v, ok := s.tag(key)
	if !ok {
		return 0, false
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// parent is the span's parent (its CHILD_OF reference), "" for a root.
func (s *jSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" && r.TraceID == s.TraceID {
			return r.SpanID
		}
	}
	return ""
}

// findTrace polls Jaeger until the trace of run id appears and stops
// growing (OTLP export and Jaeger's storage are asynchronous), and returns
// it. It fails if the run id is in more than one trace.
func (j *jaeger) findTrace(t *testing.T, runID string, since time.Time) *jTrace {
	t.Helper()
	tags, _ := json.Marshal(map[string]string{telemetry.AttrRunID: runID})
	q := url.Values{
		"service": {telemetry.ServiceName},
		"tags":    {string(tags)},
		"start":   {fmt.Sprint(since.Add(-time.Minute).UnixMicro())},
		"limit":   {"20"},
	}
	deadline := time.Now().Add(30 * time.Second)
	var (
		tr    *jTrace
		spans = -1
		err   error
	)
	for ; time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if tr == nil {
			var found []*jTrace
			if err = j.get("/api/traces?"+q.Encode(), &found); err != nil || len(found) == 0 {
				continue
			}
			if len(found) > 1 {
				ids := make([]string, len(found))
				for i, f := range found {
					ids[i] = f.TraceID
				}
				t.Fatalf("run %s is in %d traces (%v), want one", runID, len(found), ids)
			}
			tr = found[0]
		}
		var got []*jTrace
		if err = j.get("/api/traces/"+tr.TraceID, &got); err != nil || len(got) != 1 {
			continue
		}
		if len(got[0].Spans) == spans {
			return got[0]
		}
		tr, spans = got[0], len(got[0].Spans)
	}
	if tr == nil {
		t.Fatalf("no trace with %s=%s in Jaeger after 30s (last error: %v)", telemetry.AttrRunID, runID, err)
	}
	t.Fatalf("trace %s of run %s still changing after 30s (%d spans; last error: %v)", tr.TraceID, runID, spans, err)
	return nil
}

// stageStats are the span attributes each stage kind of the demo graph must
// set on its span of every batch: the batch's IDs, the cache's hits and
// misses, the bytes moved per link and by the kernels, modeled time.
var stageStats = map[string][]string{
	"load":     {"flowrun.ids", "flowrun.samples"},
	"plan":     {"flowrun.hits", "flowrun.misses", "flowrun.evictions"},
	"exchange": {"flowrun.bytes_to_device", "flowrun.bytes_to_host", "flowrun.modeled_ns"},
	"train":    {"flowrun.gather_bytes", "flowrun.modeled_ns"},
}

// checkJaegerTrace runs graph with --trace spec, finds its trace in Jaeger
// and checks, against the graph and the run's results:
//   - the run is one trace, reported by service flowrun with the run's id
//     and graph as process (resource) tags;
//   - one root span, flowrun.run, and every span descends from it (the
//     test does not insist on which span is a stage span's parent);
//   - exactly one span per stage per batch, named kind/name, with
//     flowrun.batch.seq, flowrun.run_id and flowrun.stage, and the stage
//     kind's statistics (stageStats);
//   - those statistics add up to the run's results: hits, misses and
//     evictions of the training batches to the cache figures, the exchange's
//     bytes to the bytes per link, each stage's modeled_ns to its modeled
//     mean;
//   - plugin calls are spans named <kind>/<name>.<Method>: each plan span
//     has one cache Plan child whose hits and misses are the plan span's,
//     each train span one model Step and one kernel GatherReduce child;
//   - the v3 API (OTLP JSON) returns the same number of spans as the v1 API
//     the UI reads and the checks above use.
func checkJaegerTrace(t *testing.T, j *jaeger, graph, spec string) {
	out := filepath.Join(t.TempDir(), "r.json")
	r := mustFlowrun(t, "run", graph, "-q", "--trace", spec, "--out", out)
	if strings.Contains(r.stderr, "spans not exported") {
		t.Fatalf("flowrun could not export its trace to %s:\n%s", spec, r.stderr)
	}
	res, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(graph, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := j.findTrace(t, res.RunID, res.Started)
	t.Logf("run %s: trace %s, %d spans, http://%s/trace/%s", res.RunID, tr.TraceID, len(tr.Spans), j.query, tr.TraceID)
	if n, err := j.v3Spans(tr.TraceID); err != nil || n != len(tr.Spans) {
		t.Errorf("/api/v3/traces/%s: %d spans (%v), the v1 API has %d", tr.TraceID, n, err, len(tr.Spans))
	}

	// One trace, one service, one run.
	byID := map[string]*jSpan{}
	var roots []*jSpan
	for _, s := range tr.Spans {
		if s.TraceID != tr.TraceID {
			t.Errorf("span %s (%s) in trace %s, not %s", s.OperationName, s.SpanID, s.TraceID, tr.TraceID)
		}
		byID[s.SpanID] = s
		if s.OperationName == "flowrun.run" {
			roots = append(roots, s)
		}
	}
	for id, p := range tr.Processes {
		if p.ServiceName != telemetry.ServiceName {
			t.Errorf("process %s: service %q, want %q", id, p.ServiceName, telemetry.ServiceName)
		}
		if v, _ := tagOf(p.Tags, telemetry.AttrRunID); v != res.RunID {
			t.Errorf("process %s: %s = %v, want %s", id, telemetry.AttrRunID, v, res.RunID)
		}
		if v, _ := tagOf(p.Tags, telemetry.AttrGraph); v != cfg.Name {
			t.Errorf("process %s: %s = %v, want %s", id, telemetry.AttrGraph, v, cfg.Name)
		}
	}
	if len(roots) != 1 {
		t.Fatalf("%d flowrun.run spans, want 1", len(roots))
	}
	root := roots[0]
	if p := root.parent(); p != "" {
		t.Errorf("the root span has a parent %s", p)
	}
	if got := root.str(telemetry.AttrRunID); got != res.RunID {
		t.Errorf("root span: %s = %q, want %s", telemetry.AttrRunID, got, res.RunID)
	}
	orphans := 0
	for _, s := range tr.Spans {
		if !descends(s, root, byID) {
			if orphans++; orphans <= 5 {
				t.Errorf("span %s (%s, parent %q) does not descend from the root span", s.OperationName, s.SpanID, s.parent())
			}
		}
	}
	if orphans > 5 {
		t.Errorf("... %d spans in all do not descend from the root span", orphans)
	}

	// One span per stage per batch, with its attributes.
	total := int64(res.Batches + res.EvalBatches)
	stageKind := map[string]string{} // span name → stage kind
	for name, st := range cfg.Stages {
		stageKind[st.Kind+"/"+name] = st.Kind
	}
	stageSpans := map[string]map[int64][]*jSpan{} // span name → seq → spans
	for _, s := range tr.Spans {
		if _, ok := stageKind[s.OperationName]; !ok {
			continue
		}
		seq, ok := s.int(telemetry.AttrBatchSeq)
		if !ok {
			t.Errorf("stage span %s (%s) has no %s", s.OperationName, s.SpanID, telemetry.AttrBatchSeq)
			continue
		}
		if stageSpans[s.OperationName] == nil {
			stageSpans[s.OperationName] = map[int64][]*jSpan{}
		}
		stageSpans[s.OperationName][seq] = append(stageSpans[s.OperationName][seq], s)
	}
	sums := map[string]map[string]int64{} // span name → attribute → sum over training batches
	modeled := map[string][]int64{}       // span name → modeled_ns of every batch
	for name, kind := range stageKind {
		sums[name] = map[string]int64{}
		for seq := range total {
			spans := stageSpans[name][seq]
			if len(spans) != 1 {
				t.Errorf("stage %s, batch %d: %d spans in Jaeger, want 1", name, seq, len(spans))
				continue
			}
			s := spans[0]
			if got := s.str(telemetry.AttrRunID); got != res.RunID {
				t.Errorf("%s, batch %d: %s = %q, want %s", name, seq, telemetry.AttrRunID, got, res.RunID)
			}
			if got := s.str(telemetry.AttrStage); kind+"/"+got != name {
				t.Errorf("%s, batch %d: %s = %q", name, seq, telemetry.AttrStage, got)
			}
			eval, _ := s.tag("flowrun.batch.eval")
			for _, key := range stageStats[kind] {
				v, ok := s.int(key)
				switch {
				case !ok:
					t.Errorf("%s, batch %d: no integer attribute %s (tags: %v)", name, seq, key, s.Tags)
				case v < 0:
					t.Errorf("%s, batch %d: %s = %d", name, seq, key, v)
				case key == "flowrun.modeled_ns":
					modeled[name] = append(modeled[name], v)
				case eval != true:
					sums[name][key] += v
				}
			}
		}
		if n := len(stageSpans[name]); n != int(total) {
			t.Errorf("stage %s: spans for %d batch numbers, want %d", name, n, total)
		}
	}

	// The attributes are the figures the results were made of.
	for name, kind := range stageKind {
		switch kind {
		case "plan":
			if res.Cache == nil {
				t.Errorf("results have no cache figures")
				break
			}
			for key, want := range map[string]int64{"flowrun.hits": res.Cache.Hits, "flowrun.misses": res.Cache.Misses, "flowrun.evictions": res.Cache.Evictions} {
				if got := sums[name][key]; got != want {
					t.Errorf("%s: %s over the training batches = %d in Jaeger, %d in the results", name, key, got, want)
				}
			}
			if sums[name]["flowrun.hits"] == 0 || sums[name]["flowrun.misses"] == 0 {
				t.Errorf("%s: %d hits and %d misses in all; the demo has both", name, sums[name]["flowrun.hits"], sums[name]["flowrun.misses"])
			}
		case "exchange":
			if res.Cache == nil {
				break
			}
			for key, want := range map[string]int64{"flowrun.bytes_to_device": res.Cache.LinkBytes["to_device"], "flowrun.bytes_to_host": res.Cache.LinkBytes["to_host"]} {
				if got := sums[name][key]; got != want {
					t.Errorf("%s: %s over the training batches = %d in Jaeger, %d in the results", name, key, got, want)
				}
			}
		}
		if ns := modeled[name]; len(ns) > 0 {
			var st *results.Stage
			for i := range res.Stages {
				if res.Stages[i].Kind+"/"+res.Stages[i].Name == name {
					st = &res.Stages[i]
				}
			}
			var sum float64
			for _, v := range ns {
				sum += float64(v)
			}
			mean := sum / float64(len(ns)) / 1e6
			switch {
			case st == nil || st.ModeledMs == nil:
				t.Errorf("%s: modeled time in Jaeger, none in the results", name)
			case math.Abs(mean-st.ModeledMs.Mean) > 1e-9*math.Max(1, st.ModeledMs.Mean):
				t.Errorf("%s: modeled mean %g ms in Jaeger, %g ms in the results", name, mean, st.ModeledMs.Mean)
			}
		}
	}

	// Plugin-call spans under the stage spans.
	pluginName := map[string]string{} // plugin kind → name in span names
	for _, p := range res.Plugins {
		if p.Kind == "device" {
			continue
		}
		ref, err := pluginhost.ParseRef(p.Ref)
		if err != nil {
			t.Fatal(err)
		}
		pluginName[p.Kind] = ref.Name
	}
	children := map[string]map[string][]*jSpan{} // parent span id → plugin span name → spans
	plugins := 0
	for _, s := range tr.Spans {
		if s.str("otel.scope.name") != pluginhost.ScopeName {
			continue
		}
		plugins++
		if !pluginSpanName.MatchString(s.OperationName) {
			t.Errorf("plugin span %q is not named <kind>/<name>.<Method>", s.OperationName)
		}
		p := s.parent()
		if children[p] == nil {
			children[p] = map[string][]*jSpan{}
		}
		children[p][s.OperationName] = append(children[p][s.OperationName], s)
	}
	if plugins == 0 {
		t.Fatalf("no plugin-call spans (scope %s) in the trace", pluginhost.ScopeName)
	}
	calls := map[string][]string{ // stage kind → plugin calls once per batch
		"plan":  {fmt.Sprintf("cache/%s.Plan", pluginName["cache"])},
		"train": {fmt.Sprintf("model/%s.Step", pluginName["model"]), fmt.Sprintf("kernel/%s.GatherReduce", pluginName["kernel"])},
	}
	for name, kind := range stageKind {
		for seq, spans := range stageSpans[name] {
			s := spans[0]
			for _, call := range calls[kind] {
				cs := children[s.SpanID][call]
				if len(cs) != 1 {
					t.Errorf("%s, batch %d: %d %s spans under it, want 1", name, seq, len(cs), call)
					continue
				}
				c := cs[0]
				if got, ok := c.int(telemetry.AttrBatchSeq); ok && got != seq {
					t.Errorf("%s under %s of batch %d: %s = %d", call, name, seq, telemetry.AttrBatchSeq, got)
				}
				if kind != "plan" {
					continue
				}
				for stat, key := range map[string]string{"flowrun.hits": "flowrun.cache.hits", "flowrun.misses": "flowrun.cache.misses"} {
					want, _ := s.int(stat)
					if got, ok := c.int(key); !ok || got != want {
						t.Errorf("%s of batch %d: %s = %d, its stage span's %s = %d", call, seq, key, got, stat, want)
					}
				}
			}
		}
	}
}

// descends reports whether s is root or has root among its ancestors, every
// one of them in the trace.
func descends(s, root *jSpan, byID map[string]*jSpan) bool {
	for range len(byID) + 1 {
		if s.SpanID == root.SpanID {
			return true
		}
		p := byID[s.parent()]
		if p == nil {
			return false
		}
		s = p
	}
	return false // a cycle
}
