package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

var testRes = Resource{Graph: "scratchpipe", RunID: "run-1"}

func TestFileExporterWritesOneLinePerSpan(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "traces", "run.jsonl")
	tel, err := Setup(ctx, "file:"+path, testRes)
	if err != nil {
		t.Fatal(err)
	}
	tr := tel.Tracer("flowrun/stage")

	rctx, run := tr.Start(ctx, "run")
	var planIDs []trace.SpanID
	var prev trace.SpanContext
	for seq := 0; seq < 3; seq++ {
		var opts []trace.SpanStartOption
		if prev.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: prev, Attributes: []attribute.KeyValue{attribute.String("why", "previous batch")}}))
		}
		opts = append(opts, trace.WithAttributes(
			attribute.Int64("flowrun.batch.seq", int64(seq)),
			attribute.Int64("big", 1<<62+1), // must keep every digit
			attribute.Float64("modeled_s", 0.25),
			attribute.Bool("hit", true),
			attribute.StringSlice("tables", []string{"t0", "t1"}),
		))
		sctx, plan := tr.Start(rctx, "plan", opts...)
		_, collect := tr.Start(sctx, "collect")
		collect.AddEvent("victims written back", trace.WithAttributes(attribute.Int("rows", 7)))
		if seq == 2 {
			collect.SetStatus(codes.Error, "device full")
		}
		collect.End()
		plan.End()
		planIDs = append(planIDs, plan.SpanContext().SpanID())
		prev = plan.SpanContext()
	}
	run.End()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	// Every line is one JSON object with RFC 3339 nanosecond timestamps.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines, want 7 (run + 3 × plan, collect)", len(lines))
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		for _, k := range []string{"trace_id", "span_id", "name", "start", "end", "status"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("line %d lacks %q: %s", i+1, k, l)
			}
		}
		if _, err := time.Parse(time.RFC3339Nano, m["start"].(string)); err != nil {
			t.Fatalf("line %d start: %v", i+1, err)
		}
	}

	recs, err := ReadSpansFile(path)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]SpanRecord{}
	for _, r := range recs {
		byID[r.SpanID] = r
	}
	root := recs[len(recs)-1]
	if root.Name != "run" || root.ParentSpanID != "" {
		t.Fatalf("last span %+v, want the root run span", root)
	}
	for _, r := range recs {
		if r.TraceID != root.TraceID {
			t.Fatalf("span %s in trace %s, want one trace %s", r.Name, r.TraceID, root.TraceID)
		}
		if r.Scope != "flowrun/stage" {
			t.Fatalf("scope %q", r.Scope)
		}
		if r.End.Before(r.Start) {
			t.Fatalf("span %s ends before it starts", r.Name)
		}
		switch r.Name {
		case "plan":
			if r.ParentSpanID != root.SpanID {
				t.Fatalf("plan parent %s, want run %s", r.ParentSpanID, root.SpanID)
			}
		case "collect":
			if p := byID[r.ParentSpanID]; p.Name != "plan" {
				t.Fatalf("collect parent is %q, want plan", p.Name)
			}
		}
	}

	counts := CountByNameAndInt(recs, "flowrun.batch.seq")
	for seq := int64(0); seq < 3; seq++ {
		if counts["plan"][seq] != 1 {
			t.Fatalf("plan spans for batch %d: %d, want 1 (%v)", seq, counts["plan"][seq], counts)
		}
	}
	plan2 := byID[planIDs[2].String()]
	if len(plan2.Links) != 1 || plan2.Links[0].SpanID != planIDs[1].String() || plan2.Links[0].Attributes["why"] != "previous batch" {
		t.Fatalf("plan 2 links %+v, want batch 1's plan", plan2.Links)
	}
	if n, ok := plan2.Int("big"); !ok || n != 1<<62+1 {
		t.Fatalf("big = %d, %v: int64 precision lost", n, ok)
	}
	if f, ok := plan2.Float("modeled_s"); !ok || f != 0.25 {
		t.Fatalf("modeled_s = %v", f)
	}
	if plan2.Attr("hit") != true {
		t.Fatalf("hit = %v", plan2.Attr("hit"))
	}
	var failed int
	for _, r := range recs {
		if r.Name == "collect" {
			if len(r.Events) != 1 || r.Events[0].Name != "victims written back" {
				t.Fatalf("collect events %+v", r.Events)
			}
			if r.Status.Code == "error" {
				failed++
				if r.Status.Message != "device full" {
					t.Fatalf("status %+v", r.Status)
				}
			}
		}
	}
	if failed != 1 {
		t.Fatalf("%d failed collect spans, want 1", failed)
	}
}

func TestSetupRejectsBadSpecs(t *testing.T) {
	bad := []string{
		"jaeger",
		"file:",
		"File:/tmp/x",
		"otlp://localhost:4317",
		"otlp-grpc://localhost",
		"otlp-grpc://:4317",
		"otlp-grpc://localhost:4317/v1/traces",
		"otlp-grpc://localhost:0",
		"otlp-http://localhost:70000",
		"otlp-http://localhost:http",
		"otlp-http://user:pw@localhost:4318",
		"stdout:pretty",
	}
	for _, s := range bad {
		tel, err := Setup(context.Background(), s, testRes)
		if err == nil {
			_ = tel.Shutdown(context.Background())
			t.Errorf("Setup(%q) succeeded", s)
			continue
		}
		if !errors.Is(err, ErrBadSpec) {
			t.Errorf("Setup(%q): %v does not wrap ErrBadSpec", s, err)
		}
		if !strings.Contains(err.Error(), "file:PATH") || !strings.Contains(err.Error(), "otlp-http://HOST:PORT") {
			t.Errorf("Setup(%q): %q does not list the valid forms", s, err)
		}
	}
	for _, s := range []string{"", "none", "stdout", "file:x.jsonl", "otlp-grpc://localhost:4317", "otlp-http://127.0.0.1:4318", "otlp-http://jaeger:4318/custom/traces"} {
		if err := ValidateSpec(s); err != nil {
			t.Errorf("ValidateSpec(%q): %v", s, err)
		}
	}
}

// A collector that is not there must cost a run seconds, not hang it. The
// bound is generous; it only has to be well below the exporters' own
// 10 s export timeout and minute-long retries.
func TestShutdownWithoutCollectorReturns(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	for _, scheme := range []string{"otlp-grpc", "otlp-http"} {
		t.Run(scheme, func(t *testing.T) {
			tel, err := Setup(context.Background(), scheme+"://"+addr, testRes)
			if err != nil {
				t.Fatal(err)
			}
			tr := tel.Tracer("test")
			for i := 0; i < 10; i++ {
				_, s := tr.Start(context.Background(), "stage")
				s.End()
			}
			done := make(chan error, 1)
			go func() { done <- tel.Shutdown(context.Background()) }()
			select {
			case err := <-done:
				// Lost spans are reported, not hidden (and not panicked).
				if err == nil {
					t.Fatal("Shutdown reported success with no collector listening")
				}
				t.Logf("shutdown: %v", err)
			case <-time.After(5 * time.Second):
				t.Fatal("Shutdown hung with no collector listening")
			}
		})
	}
}

func TestNoneIsNoop(t *testing.T) {
	tel, err := Setup(context.Background(), "none", testRes)
	if err != nil {
		t.Fatal(err)
	}
	_, s := tel.Tracer("x").Start(context.Background(), "stage")
	if s.IsRecording() {
		t.Fatal("none exporter records spans")
	}
	s.End()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestStdoutAndNoGlobals(t *testing.T) {
	before := otel.GetTracerProvider()
	var buf bytes.Buffer
	tel, err := Setup(context.Background(), "stdout", testRes, WithStdout(&buf))
	if err != nil {
		t.Fatal(err)
	}
	if otel.GetTracerProvider() != before {
		t.Fatal("Setup replaced the global tracer provider")
	}
	_, s := tel.Tracer("x").Start(context.Background(), "load")
	s.End()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"load"`) || !strings.Contains(buf.String(), "scratchpipe") {
		t.Fatalf("stdout exporter wrote %q", buf.String())
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
}

func TestReadSpansReportsBadLine(t *testing.T) {
	in := `{"trace_id":"a","span_id":"b","name":"x","start":"2024-01-01T00:00:00Z","end":"2024-01-01T00:00:01Z","status":{"code":"unset"}}

not json
`
	recs, err := ReadSpans(bufio.NewReader(strings.NewReader(in)))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("got %v, want an error naming line 3", err)
	}
	if len(recs) != 1 {
		t.Fatalf("%d records before the bad line, want 1", len(recs))
	}
}

// The run's context is usually cancelled by the time telemetry shuts down;
// the span file must still be closed properly.
func TestShutdownWithCancelledContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	tel, err := Setup(context.Background(), "file:"+path, testRes)
	if err != nil {
		t.Fatal(err)
	}
	_, s := tel.Tracer("x").Start(context.Background(), "load",
		trace.WithAttributes(attribute.String(AttrStage, "load"), attribute.Int64(AttrBatchSeq, 0)))
	s.End()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a cancelled context: %v", err)
	}
	recs, err := ReadSpansFile(path)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	if n, ok := recs[0].Int(AttrBatchSeq); !ok || n != 0 {
		t.Fatalf("batch seq %v %v", n, ok)
	}
}
