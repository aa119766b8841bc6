package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// SpanRecord is one line of a JSONL span file. Field names are stable: tests
// and `flowrun report` rely on them.
type SpanRecord struct {
	TraceID      string `json:"trace_id"`
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"parent_span_id,omitempty"`
	Name         string `json:"name"`
	Kind         string `json:"kind,omitempty"`
	// Scope is the instrumentation scope, i.e. the tracer's name.
	Scope string `json:"scope,omitempty"`
	// Start and End are written as RFC 3339 with nanoseconds, in UTC.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Attributes is flat: key → bool, number, string or a list of them.
	// Numbers read back as json.Number so int64 values keep every digit; use
	// Int, Float and String to read them.
	Attributes map[string]any `json:"attributes,omitempty"`
	Status     SpanStatus     `json:"status"`
	Links      []SpanLink     `json:"links,omitempty"`
	Events     []SpanEvent    `json:"events,omitempty"`
}

// SpanStatus is a span's status: code is "unset", "ok" or "error".
type SpanStatus struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// SpanLink points at another span, e.g. the batch a stage waited on.
type SpanLink struct {
	TraceID    string         `json:"trace_id"`
	SpanID     string         `json:"span_id"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// SpanEvent is a timestamped annotation inside a span.
type SpanEvent struct {
	Name       string         `json:"name"`
	Time       time.Time      `json:"time"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// Attr returns the attribute's value as decoded (nil when absent).
func (r SpanRecord) Attr(key string) any { return r.Attributes[key] }

// Int returns an integer attribute.
func (r SpanRecord) Int(key string) (int64, bool) {
	switch v := r.Attributes[key].(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case int64:
		return v, true
	case int:
		return int64(v), true
	case float64:
		if v == float64(int64(v)) {
			return int64(v), true
		}
	}
	return 0, false
}

// Float returns a numeric attribute.
func (r SpanRecord) Float(key string) (float64, bool) {
	switch v := r.Attributes[key].(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	}
	return 0, false
}

// String returns a string attribute.
func (r SpanRecord) String(key string) (string, bool) {
	s, ok := r.Attributes[key].(string)
	return s, ok
}

// JSONLExporter is a sdktrace.SpanExporter writing one SpanRecord per line.
// Each ExportSpans call ends with a flush, so the file is complete up to the
// last exported span even if the process dies afterwards.
type JSONLExporter struct {
	mu     sync.Mutex
	dst    io.Writer
	w      *bufio.Writer
	closed bool
}

var _ sdktrace.SpanExporter = (*JSONLExporter)(nil)

// NewJSONLExporter writes to w; Shutdown closes w if it is an io.Closer.
func NewJSONLExporter(w io.Writer) *JSONLExporter {
	return &JSONLExporter{dst: w, w: bufio.NewWriterSize(w, 64<<10)}
}

// ExportSpans writes the spans, one line each.
func (e *JSONLExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("telemetry: jsonl exporter is shut down")
	}
	enc := json.NewEncoder(e.w)
	for _, s := range spans {
		if err := enc.Encode(recordOf(s)); err != nil {
			return fmt.Errorf("telemetry: write span %q: %w", s.Name(), err)
		}
	}
	if err := e.w.Flush(); err != nil {
		return fmt.Errorf("telemetry: write spans: %w", err)
	}
	return nil
}

// Shutdown flushes and closes the destination. Later exports fail.
func (e *JSONLExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	err := e.w.Flush()
	if c, ok := e.dst.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	if err != nil {
		return fmt.Errorf("telemetry: close span file: %w", err)
	}
	return nil
}

func recordOf(s sdktrace.ReadOnlySpan) SpanRecord {
	sc := s.SpanContext()
	r := SpanRecord{
		TraceID:    sc.TraceID().String(),
		SpanID:     sc.SpanID().String(),
		Name:       s.Name(),
		Kind:       s.SpanKind().String(),
		Scope:      s.InstrumentationScope().Name,
		Start:      s.StartTime().UTC(),
		End:        s.EndTime().UTC(),
		Attributes: attrMap(s.Attributes()),
		Status:     SpanStatus{Code: statusCode(s.Status().Code), Message: s.Status().Description},
	}
	if p := s.Parent(); p.IsValid() {
		r.ParentSpanID = p.SpanID().String()
	}
	for _, l := range s.Links() {
		r.Links = append(r.Links, SpanLink{
			TraceID:    l.SpanContext.TraceID().String(),
			SpanID:     l.SpanContext.SpanID().String(),
			Attributes: attrMap(l.Attributes),
		})
	}
	for _, ev := range s.Events() {
		r.Events = append(r.Events, SpanEvent{Name: ev.Name, Time: ev.Time.UTC(), Attributes: attrMap(ev.Attributes)})
	}
	return r
}

func statusCode(c codes.Code) string {
	switch c {
	case codes.Ok:
		return "ok"
	case codes.Error:
		return "error"
	default:
		return "unset"
	}
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// ReadSpans decodes a JSONL span stream. Blank lines are skipped; a bad line
// is an error naming its line number.
func ReadSpans(r io.Reader) ([]SpanRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20) // a span with many attributes can be long
	var out []SpanRecord
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var rec SpanRecord
		if err := dec.Decode(&rec); err != nil {
			return out, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	return out, nil
}

// ReadSpansFile loads a span file written by the file exporter.
func ReadSpansFile(path string) ([]SpanRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("telemetry: read spans: %w", err)
	}
	defer f.Close()
	recs, err := ReadSpans(f)
	if err != nil {
		return recs, fmt.Errorf("telemetry: read spans %s: %w", path, err)
	}
	return recs, nil
}

// CountByNameAndInt counts records per span name and per value of an integer
// attribute (typically the batch sequence), the shape of "one span per
// stage per batch" checks. Records without the attribute are counted under
// -1.
func CountByNameAndInt(recs []SpanRecord, key string) map[string]map[int64]int {
	out := map[string]map[int64]int{}
	for _, r := range recs {
		v, ok := r.Int(key)
		if !ok {
			v = -1
		}
		if out[r.Name] == nil {
			out[r.Name] = map[int64]int{}
		}
		out[r.Name][v]++
	}
	return out
}
