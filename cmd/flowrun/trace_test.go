package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/telemetry"
)

// TestTraceDemo runs the demo with --trace file:spans.jsonl and checks the
// trace's shape (see checkTrace), plugins in process.
func TestTraceDemo(t *testing.T) {
	t.Parallel()
	checkTrace(t, demo)
}

// TestTraceDemoSubprocess is TestTraceDemo with every plugin out of process:
// the plugin-call spans are the host's client spans around each gRPC call.
func TestTraceDemoSubprocess(t *testing.T) {
	t.Parallel()
	checkTrace(t, filepath.Join(stagedGraphs(t), "demo-subprocess.yaml"))
}

// pluginSpanName is "<kind>/<name>.<Method>", the plugin host's span names.
var pluginSpanName = regexp.MustCompile(`^(cache|kernel|model|device)/[^/]+\.[A-Z][A-Za-z]*$`)

// span is a span record with what checkTrace reads of it.
type span struct {
	telemetry.SpanRecord
	seq    int64
	hasSeq bool
}

// checkTrace runs graph with a JSONL trace and checks, against the graph's
// own stages and the run's results:
//   - one trace: every span in the file has the trace id of the run's single
//     root span, flowrun.run;
//   - exactly one span per stage per batch, named kind/name, for every batch
//     the run processed (training and held-out);
//   - one span "batch" per batch, a child of the root; every stage's span
//     is a child of its batch's span, and every non-source stage's span
//     links to its upstream stage's span of the same batch — so both
//     contexts crossed NATS in the message headers;
//   - plugin calls are spans named <kind>/<name>.<Method>, children of the
//     root (set-up calls) or of the stage span of the batch they serve; the
//     plan stage calls the cache's Plan once per batch, train calls the
//     model's Step and the kernel's GatherReduce once per batch.
//
// It returns the run's results.
func checkTrace(t *testing.T, graph string, args ...string) *results.Results {
	t.Helper()
	spansFile := filepath.Join(t.TempDir(), "spans.jsonl")
	res := runResults(t, graph, append([]string{"--trace", "file:" + spansFile}, args...)...)
	cfg, _, err := config.Load(graph, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := telemetry.ReadSpansFile(spansFile)
	if err != nil {
		t.Fatal(err)
	}

	byID := map[string]*span{}
	var roots []*span
	for _, r := range recs {
		s := &span{SpanRecord: r}
		s.seq, s.hasSeq = r.Int(telemetry.AttrBatchSeq)
		if byID[r.SpanID] != nil {
			t.Errorf("span id %s used twice", r.SpanID)
		}
		byID[r.SpanID] = s
		if r.Name == "flowrun.run" {
			roots = append(roots, s)
		}
	}
	if len(roots) != 1 {
		t.Fatalf("%d flowrun.run spans, want 1", len(roots))
	}
	root := roots[0]
	if root.ParentSpanID != "" {
		t.Errorf("the root span has a parent %s", root.ParentSpanID)
	}
	for _, r := range recs {
		if r.TraceID != root.TraceID {
			t.Errorf("span %s (%s) in trace %s, not the run's %s", r.Name, r.SpanID, r.TraceID, root.TraceID)
		}
	}

	// The batches the run processed: every training and held-out batch.
	total := int64(res.Batches + res.EvalBatches)
	if res.EvalBatches != cfg.Dataset.EvalBatches || res.Batches != cfg.Dataset.Batches {
		t.Errorf("results: %d + %d batches, graph: %d + %d", res.Batches, res.EvalBatches, cfg.Dataset.Batches, cfg.Dataset.EvalBatches)
	}

	// One span per stage per batch.
	stageID := map[string]string{}  // stage name → span name
	producer := map[string]string{} // subject → stage name
	for name, st := range cfg.Stages {
		stageID[name] = st.Kind + "/" + name
		for _, out := range st.Out {
			producer[out] = name
		}
	}
	counts := telemetry.CountByNameAndInt(recs, telemetry.AttrBatchSeq)
	stageSpan := map[string]map[int64]*span{} // span name → seq → span
	for _, id := range stageID {
		stageSpan[id] = map[int64]*span{}
		for seq := range total {
			if n := counts[id][seq]; n != 1 {
				t.Errorf("stage %s, batch %d: %d spans, want 1", id, seq, n)
			}
		}
		if n := len(counts[id]); n != int(total) {
			t.Errorf("stage %s: spans for %d batch numbers, want %d (%v)", id, n, total, counts[id])
		}
	}
	for _, s := range byID {
		if m, ok := stageSpan[s.Name]; ok && s.hasSeq {
			m[s.seq] = s
		}
	}
	if t.Failed() {
		return res
	}

	// Batch spans: one per batch, under the root.
	batchSpan := map[int64]*span{}
	for _, s := range byID {
		if s.Name != "batch" {
			continue
		}
		if !s.hasSeq || batchSpan[s.seq] != nil {
			t.Errorf("batch span %s: seq %d (has seq %v) missing or duplicated", s.SpanID, s.seq, s.hasSeq)
			continue
		}
		if s.ParentSpanID != root.SpanID {
			t.Errorf("batch %d: parent %s, want the root span %s", s.seq, s.ParentSpanID, root.SpanID)
		}
		batchSpan[s.seq] = s
	}
	if len(batchSpan) != int(total) {
		t.Errorf("%d batch spans, want %d", len(batchSpan), total)
	}

	// Stage spans: children of their batch's span, whatever process or
	// goroutine ran them; the non-sources linked to their upstream stage's
	// span of the same batch.
	for name, st := range cfg.Stages {
		id := stageID[name]
		for seq, s := range stageSpan[id] {
			if b := batchSpan[seq]; b == nil || s.ParentSpanID != b.SpanID {
				t.Errorf("%s, batch %d: parent %s is not the batch's span", id, seq, s.ParentSpanID)
			}
			if st.In == "" {
				if len(s.Links) != 0 {
					t.Errorf("source %s, batch %d: %d links, want none", id, seq, len(s.Links))
				}
				continue
			}
			up := stageID[producer[st.In]]
			if len(s.Links) != 1 {
				t.Errorf("%s, batch %d: %d links, want 1 (to %s)", id, seq, len(s.Links), up)
				continue
			}
			linked := byID[s.Links[0].SpanID]
			switch {
			case linked == nil:
				t.Errorf("%s, batch %d: linked span %q is not in the trace", id, seq, s.Links[0].SpanID)
			case linked.Name != up || !linked.hasSeq || linked.seq != seq:
				t.Errorf("%s, batch %d: links to %s of batch %d, want %s of batch %d", id, seq, linked.Name, linked.seq, up, seq)
			}
		}
	}

	// Plugin-call spans.
	pluginName := map[string]string{} // plugin kind → name in span names
	for _, p := range res.Plugins {
		if p.Kind == "device" {
			continue // several; device spans are only checked for shape
		}
		ref, err := pluginhost.ParseRef(p.Ref)
		if err != nil {
			t.Fatal(err)
		}
		pluginName[p.Kind] = ref.Name
	}
	children := map[string]map[string]int{} // stage span id → plugin span name → calls
	plugins := 0
	for _, s := range byID {
		if s.Scope != pluginhost.ScopeName {
			continue
		}
		plugins++
		if !pluginSpanName.MatchString(s.Name) {
			t.Errorf("plugin span %q is not named <kind>/<name>.<Method>", s.Name)
		}
		if s.ParentSpanID == root.SpanID {
			continue
		}
		parent := byID[s.ParentSpanID]
		if parent == nil || stageSpan[parent.Name] == nil {
			t.Errorf("plugin span %s: parent %q is neither the root nor a stage span", s.Name, s.ParentSpanID)
			continue
		}
		if s.hasSeq && s.seq != parent.seq {
			t.Errorf("plugin span %s of batch %d under %s of batch %d", s.Name, s.seq, parent.Name, parent.seq)
		}
		if children[parent.SpanID] == nil {
			children[parent.SpanID] = map[string]int{}
		}
		children[parent.SpanID][s.Name]++
	}
	if plugins == 0 {
		t.Fatal("no plugin-call spans")
	}
	calls := map[string][]string{ // stage kind → plugin calls once per batch
		"plan":  {fmt.Sprintf("cache/%s.Plan", pluginName["cache"])},
		"train": {fmt.Sprintf("model/%s.Step", pluginName["model"]), fmt.Sprintf("kernel/%s.GatherReduce", pluginName["kernel"])},
	}
	for name, st := range cfg.Stages {
		id := stageID[name]
		for seq, s := range stageSpan[id] {
			for _, call := range calls[st.Kind] {
				if n := children[s.SpanID][call]; n != 1 {
					t.Errorf("%s, batch %d: %d %s spans under it, want 1 (children: %v)", id, seq, n, call, children[s.SpanID])
				}
			}
		}
	}
	return res
}
