// Package devicetest is the conformance suite for device plugins. A
// device's tests call Run with a constructor, which checks the contract of
// sdk/device over real gRPC in process, and RunBinary with the path of the
// built plugin binary, which checks it against the binary launched as a
// go-plugin subprocess:
//
//	func TestConformance(t *testing.T) {
//		devicetest.Run(t, func() device.Device { return hbm.New() })
//	}
//
// The suite checks that the profile is sane (positive bandwidth, an
// efficiency in (0, 1], a name and a source), that Cost answers one
// non-negative modeled time per op, deterministically, that more bytes or
// more FLOPs never cost less time, that ops carrying the optional Keys and
// Layers are priced like any other, and that impossible ops are refused
// with plugin.ErrInvalidRequest.
//
// Mock is a Device with function fields for tests of code that uses devices.
package devicetest

import (
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Option adjusts a conformance run.
type Option func(*config)

type config struct {
	options json.RawMessage
}

// WithOptions gives the device's own options (Setup.Options), as a JSON
// object: a profile name, custom figures, ...
func WithOptions(raw json.RawMessage) Option { return func(c *config) { c.options = raw } }

// suite is the device kind's conformance suite (sdk/internal/plugintest).
var suite = plugintest.Suite[device.Device, config, Option]{
	Kind: plugin.KindDevice, Server: device.ServerPlugin, Host: device.HostPlugin,
	Setup: config.setup, Contract: config.runContract,
}

// Run checks the device contract against devices made by newImpl, each served
// over real gRPC in this process. Every subtest gets a fresh device.
func Run(t *testing.T, newImpl func() device.Device, opts ...Option) {
	t.Helper()
	suite.Run(t, newImpl, opts)
}

// RunBinary checks that the plugin binary at path answers "describe" as a
// device and honours the device contract, launched as a go-plugin subprocess for
// every subtest. It skips only when path is empty; a missing binary fails.
func RunBinary(t *testing.T, path string, opts ...Option) {
	t.Helper()
	suite.RunBinary(t, path, opts)
}
