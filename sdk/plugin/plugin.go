// Package plugin is the base every flowrun plugin kind shares: the go-plugin
// handshake, the API version, the Info a plugin reports about itself and the
// Setup it is configured with.
//
// It is the leaf of the SDK: it imports no other flowrun package, so that the
// kind packages (sdk/cache, sdk/kernel, sdk/model, sdk/device) can embed its
// Base without cycles. It must never import framework/.
package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
)

// Kind names one of the four plugin kinds.
type Kind string

// The plugin kinds. A plugin binary serves exactly one kind.
const (
	KindCache  Kind = "cache"
	KindKernel Kind = "kernel"
	KindModel  Kind = "model"
	KindDevice Kind = "device"
)

// Kinds lists every plugin kind in a stable order.
var Kinds = []Kind{KindCache, KindKernel, KindModel, KindDevice}

// APIVersion is the version of the plugin protocol this SDK speaks. A host
// and a plugin negotiate it through go-plugin's versioned plugin sets; a
// plugin built against another major version is refused at launch.
//
// Version 2: host tables may be compact (sdk/kernel.Table.Index), which a
// kernel of version 1 would read as row-major, silently gathering other
// rows; it is refused instead.
const APIVersion = 2

// Handshake is the one go-plugin handshake shared by every flowrun plugin.
// The cookie only stops a plugin binary from being run by mistake as a
// normal program; it is not a security measure.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  APIVersion,
	MagicCookieKey:   "FLOWRUN_PLUGIN",
	MagicCookieValue: "5d1b0f9e-flowrun-plugin",
}

// Sentinel errors a plugin may return; the SDK carries them across gRPC as
// status codes and turns them back into these values on the host.
var (
	// ErrInvalidConfig means Configure was given options the plugin rejects.
	ErrInvalidConfig = errors.New("invalid plugin configuration")
	// ErrNotConfigured means a batch call came before Configure.
	ErrNotConfigured = errors.New("plugin not configured")
	// ErrInvalidRequest means a batch call's arguments do not fit the setup
	// (a region too small, a table index out of range, ...).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrUnsupported means the plugin does not implement an optional call.
	ErrUnsupported = errors.New("unsupported by this plugin")
)

// Field documents one option of a plugin's configuration.
type Field struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Default     string `json:"default,omitempty"`
	Description string `json:"description"`
}

// Info is what a plugin says about itself; plugin binaries print it as JSON
// when run with the single argument "describe".
type Info struct {
	Kind        Kind    `json:"kind"`
	Name        string  `json:"name"`
	Version     string  `json:"version"`
	APIVersion  int     `json:"api_version"`
	Description string  `json:"description"`
	Config      []Field `json:"config,omitempty"`
	// Ops lists the optional batch calls the plugin implements (a kernel's
	// "gather-reduce", "scatter", ...), so a host can reject a graph that asks
	// for one it lacks before anything runs.
	Ops []string `json:"ops,omitempty"`
}

// NewInfo is a plugin's Info with its kind and this SDK's API version
// filled in, as every plugin's Info method answers.
func NewInfo(kind Kind, name, version, description string, config []Field) Info {
	return Info{Kind: kind, Name: name, Version: version, APIVersion: APIVersion, Description: description, Config: config}
}

// Table describes one embedding table of the run.
type Table struct {
	Rows int64 `json:"rows"`
	Dim  int   `json:"dim"`
}

// Setup is what a plugin is configured with before the first batch: the
// shape of the run and the plugin's own options from the graph.
type Setup struct {
	RunID     string  `json:"run_id"`
	Seed      uint64  `json:"seed"`
	Tables    []Table `json:"tables"`
	BatchSize int     `json:"batch_size"`
	Lookups   int     `json:"lookups"`
	// DenseFeatures is the number of dense (continuous) inputs per sample.
	DenseFeatures int `json:"dense_features"`
	// Options is the plugin's own section of the graph, as JSON. Decode it
	// with DecodeOptions so unknown keys are rejected.
	Options json.RawMessage `json:"options,omitempty"`
}

// Base is embedded by every plugin kind's interface.
type Base interface {
	// Info describes the plugin. It must not depend on Configure.
	Info(ctx context.Context) (Info, error)
	// Configure prepares the plugin for a run. It is called once, before any
	// batch call, and may be called again to start a new run.
	Configure(ctx context.Context, setup Setup) error
}

// DecodeOptions decodes a plugin's options into dst, rejecting unknown keys
// and trailing data. Empty options leave dst (the defaults) untouched. An
// unknown key and a value of the wrong type are a *FieldError naming the
// key.
func DecodeOptions(raw json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, dst)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after options", ErrInvalidConfig)
	}
	return nil
}
