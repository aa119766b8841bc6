package plugintest

import (
	"fmt"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Suite is one kind's conformance suite: the kind, its go-plugin glue, and
// its contract over the suite's configuration C, which the suite's
// options O adjust. Before the kind's own contract, the suite checks what
// every kind shares: Info answers before Configure, and Configure refuses
// an option no plugin knows. A kind's test package declares one Suite and
// its Run and RunBinary are one line each:
//
//	var suite = plugintest.Suite[device.Device, config, Option]{
//		Kind: plugin.KindDevice, Server: device.ServerPlugin, Host: device.HostPlugin,
//		Setup: config.setup, Contract: config.runContract,
//	}
//	func Run(t *testing.T, newImpl func() device.Device, opts ...Option) {
//		t.Helper()
//		suite.Run(t, newImpl, opts)
//	}
type Suite[T plugin.Base, C any, O ~func(*C)] struct {
	Kind plugin.Kind
	// Server is the kind's ServerPlugin, Host its HostPlugin.
	Server func(T) goplugin.Plugin
	Host   func() goplugin.Plugin
	// Defaults is the configuration before the options apply.
	Defaults C
	// Setup is the Setup the contract configures plugins with under a
	// configuration: the plugin's own options given to the suite, and
	// what a host would add to them.
	Setup func(C, testing.TB) plugin.Setup
	// Contract runs the kind's own contract tests under a configuration.
	Contract func(C, *testing.T, func(*testing.T) T)
}

// UnknownOptionKey is the option no plugin of kind knows, which the suite
// adds to the Setup's options to check that Configure refuses it.
func UnknownOptionKey(kind plugin.Kind) string { return fmt.Sprintf("%stest_no_such_option", kind) }

// contract is the whole contract under c: the checks every kind shares,
// then the kind's own.
func (s Suite[T, C, O]) contract(c C) Contract[T] {
	return func(t *testing.T, connect func(*testing.T) T) {
		t.Helper()
		t.Run("Info", func(t *testing.T) { Info(t, s.Kind, connect(t)) })
		t.Run("UnknownOption", func(t *testing.T) {
			setup := s.Setup(c, t)
			setup.Options = MergeOptions(t, string(s.Kind)+"test", setup.Options, map[string]any{UnknownOptionKey(s.Kind): true})
			UnknownOption(t, connect(t), setup)
		})
		s.Contract(c, t, connect)
	}
}

// Config is the suite's Defaults with opts applied in order.
func (s Suite[T, C, O]) Config(opts []O) C {
	c := s.Defaults
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Run checks the contract against plugins made by newImpl, each served
// over real gRPC in this process (the package function Run).
func (s Suite[T, C, O]) Run(t *testing.T, newImpl func() T, opts []O) {
	t.Helper()
	Run(t, s.Kind, s.Server, newImpl, s.contract(s.Config(opts)))
}

// RunBinary checks that the plugin binary at path answers "describe" as
// the kind and honours the contract, launched as a go-plugin subprocess
// for every connection (the package function RunBinary).
func (s Suite[T, C, O]) RunBinary(t *testing.T, path string, opts []O) {
	t.Helper()
	RunBinary(t, s.Kind, path, s.Host, s.contract(s.Config(opts)))
}
