package plugintest

import (
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Suite is one kind's conformance suite: the kind, its go-plugin glue, and
// its contract over the suite's configuration C, which the suite's
// options O adjust. A kind's test package declares one Suite and its Run
// and RunBinary are one line each:
//
//	var suite = plugintest.Suite[device.Device, config, Option]{
//		Kind: plugin.KindDevice, Server: device.ServerPlugin, Host: device.HostPlugin,
//		Contract: config.runContract,
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
	// Contract runs the kind's contract tests under a configuration.
	Contract func(C, *testing.T, func(*testing.T) T)
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
	c := s.Config(opts)
	Run(t, s.Kind, s.Server, newImpl, func(t *testing.T, connect func(*testing.T) T) { s.Contract(c, t, connect) })
}

// RunBinary checks that the plugin binary at path answers "describe" as
// the kind and honours the contract, launched as a go-plugin subprocess
// for every connection (the package function RunBinary).
func (s Suite[T, C, O]) RunBinary(t *testing.T, path string, opts []O) {
	t.Helper()
	c := s.Config(opts)
	RunBinary(t, s.Kind, path, s.Host, func(t *testing.T, connect func(*testing.T) T) { s.Contract(c, t, connect) })
}
