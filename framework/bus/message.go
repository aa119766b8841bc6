package bus

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
)

// Message is what travels on a subject: a small header and a small payload.
// Bulk data belongs in shared-memory regions whose handles go in the header
// or the payload.
type Message struct {
	// Subject the message was received on; set on delivery, ignored by
	// Publish (which takes the subject as an argument).
	Subject string
	// Header keys are case-sensitive and kept exactly as written.
	Header nats.Header
	// Data is the payload. Publish copies it before returning.
	Data []byte
}

// NewMessage returns a message with an empty header and the given payload.
func NewMessage(data []byte) *Message {
	return &Message{Header: nats.Header{}, Data: data}
}

// HeaderCarrier adapts a nats.Header to propagation.TextMapCarrier.
//
// It writes keys exactly as given and never canonicalises them: W3C trace
// context uses lower-case "traceparent", and an http.Header-style carrier
// would turn it into "Traceparent", which case-exact readers (other NATS
// clients, the JetStream tooling) then miss.
type HeaderCarrier nats.Header

var _ propagation.TextMapCarrier = HeaderCarrier(nil)

// Get returns the first value for key. An exact match wins; otherwise a
// case-insensitive match is accepted, so that a header canonicalised by some
// intermediary still yields its trace context.
func (c HeaderCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range c {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Set replaces the values for key, spelled exactly as given.
func (c HeaderCarrier) Set(key, value string) { c[key] = []string{value} }

// Keys lists the header keys.
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// traceContext is the only propagator the bus uses; the otel global one is
// never consulted, so that telemetry stays something components are handed.
var traceContext = propagation.TraceContext{}

// Inject writes the span context of ctx (traceparent, tracestate) into the
// message header, allocating the header if needed.
func Inject(ctx context.Context, m *Message) {
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	traceContext.Inject(ctx, HeaderCarrier(m.Header))
}

// Extract returns ctx carrying the remote span context found in the message
// header, or ctx unchanged when there is none.
func Extract(ctx context.Context, m *Message) context.Context {
	if m == nil || m.Header == nil {
		return ctx
	}
	return traceContext.Extract(ctx, HeaderCarrier(m.Header))
}
