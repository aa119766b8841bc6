// Package telemetry owns how a flowrun run records its trace: one trace per
// run, one span per stage per batch. It builds a tracer provider from an
// exporter spec (none, stdout, file:PATH, otlp-grpc://HOST:PORT,
// otlp-http://HOST:PORT), writes and reads back the JSONL span files that
// tests and reports consume, and shuts the exporters down with a short
// timeout so that a missing collector never hangs a run.
//
// Telemetry is handed to components; this package never sets or reads the
// otel global tracer provider or propagator.
//
// Package telemetry must not import other framework packages: every
// component imports it.
package telemetry
