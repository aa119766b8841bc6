// Package pluginhost is the framework side of flowrun's plugins: it turns a
// plugin reference from a graph into a value of the kind's Go interface.
//
// A reference is either "builtin:NAME", served in process by a constructor
// the CLI lists in Builtins, or the path of a plugin binary, launched as a
// hashicorp/go-plugin gRPC subprocess. Both come back as the same interface
// (cache.Cache, kernel.Kernel, model.Model, device.Device), wrapped so that
// every call is an OpenTelemetry span "<kind>/<name>.<Method>", a child of
// the caller's span; for a subprocess the span context also crosses the
// process boundary in gRPC metadata, so spans the plugin starts hang below.
//
// The Host watches every subprocess and reports one that exits while in use
// on Failures, naming the plugin, its path and pid, within a second. Close
// kills them all, without reporting. A subprocess runs in its own process
// group, killed as a whole within a deadline, and dies with the host
// (Linux's parent-death signal). A graph may pin a binary's SHA-256 (Pin);
// a binary that differs, is no plugin, or is of another kind is refused
// with a one-line *RefusedError.
//
// The package imports sdk/ (the kind packages and region) and libraries; it
// does not import the rest of framework/, and nothing in it is global: the
// tracer provider, logger and builtins come in Settings.
package pluginhost
