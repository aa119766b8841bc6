package plugintest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Contract runs a kind's contract tests; connect returns a fresh,
// unconfigured plugin behind real gRPC each time it is called.
type Contract[T plugin.Base] func(t *testing.T, connect func(*testing.T) T)

// Run is the body of every suite's Run: contract against plugins of kind
// made by newImpl, each served by serve (the kind's ServerPlugin) over real
// gRPC in this process.
func Run[T plugin.Base](t *testing.T, kind plugin.Kind, serve func(T) goplugin.Plugin, newImpl func() T, contract Contract[T]) {
	t.Helper()
	contract(t, func(t *testing.T) T {
		return InProcess(t, kind, serve(newImpl())).(T)
	})
}

// RunBinary is the body of every suite's RunBinary: the binary at path must
// answer "describe" as kind, then contract runs against it, launched as a
// go-plugin subprocess through host (the kind's HostPlugin) for every
// connection. It skips only when path is empty; a missing binary fails.
func RunBinary[T plugin.Base](t *testing.T, kind plugin.Kind, path string, host func() goplugin.Plugin, contract Contract[T]) {
	t.Helper()
	if path == "" {
		t.Skipf("%stest: no plugin binary path given", kind)
	}
	CheckBinary(t, path)
	t.Run("Describe", func(t *testing.T) { Describe(t, kind, path) })
	contract(t, func(t *testing.T) T {
		return Binary(t, kind, path, host()).(T)
	})
}

// Info checks what every kind's contract asks of Info before Configure: it
// answers, with a name, kind and this SDK's API version.
func Info(t *testing.T, kind plugin.Kind, p plugin.Base) plugin.Info {
	t.Helper()
	info, err := p.Info(context.Background())
	if err != nil {
		t.Fatalf("Info before Configure: %v", err)
	}
	if info.Name == "" {
		t.Error("Info.Name is empty")
	}
	if info.Kind != kind {
		t.Errorf("Info.Kind = %q, want %q", info.Kind, kind)
	}
	if info.APIVersion != plugin.APIVersion {
		t.Errorf("Info.APIVersion = %d, want %d", info.APIVersion, plugin.APIVersion)
	}
	return info
}

// MergeOptions merges the extra maps, in order, into options, a plugin's
// own options given to a suite (a JSON object, or empty); suite names the
// suite when options are not an object.
func MergeOptions(t testing.TB, suite string, options json.RawMessage, extra ...map[string]any) json.RawMessage {
	t.Helper()
	m := map[string]any{}
	if len(bytes.TrimSpace(options)) > 0 {
		if err := json.Unmarshal(options, &m); err != nil {
			t.Fatalf("%s: WithOptions: not a JSON object: %v", suite, err)
		}
	}
	for _, e := range extra {
		for k, v := range e {
			m[k] = v
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Configured is p, configured with setup; t fails when p refuses it.
func Configured[T plugin.Base](t testing.TB, p T, setup plugin.Setup) T {
	t.Helper()
	if err := p.Configure(context.Background(), setup); err != nil {
		t.Fatalf("Configure(%s): %v", setup.Options, err)
	}
	return p
}

// UnknownOption checks that p refuses setup, whose options hold a key no
// plugin knows, with plugin.ErrInvalidConfig.
func UnknownOption(t *testing.T, p plugin.Base, setup plugin.Setup) {
	t.Helper()
	if err := p.Configure(context.Background(), setup); !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Fatalf("Configure with an unknown option: err = %v, want plugin.ErrInvalidConfig (decode options with plugin.DecodeOptions)", err)
	}
}
