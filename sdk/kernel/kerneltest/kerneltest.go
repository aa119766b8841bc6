// Package kerneltest is the conformance suite for kernel plugins. A
// kernel's tests call Run with a constructor, which checks the contract of
// sdk/kernel over real gRPC in process, and RunBinary with the path of the
// built plugin binary, which checks it against the binary launched as a
// go-plugin subprocess:
//
//	func TestConformance(t *testing.T) {
//		kerneltest.Run(t, func() kernel.Kernel { return cpu.New() })
//	}
//
// For every operator the kernel lists in Info.Ops the suite compares its
// output with a reference computed in the test: gather-reduce sum must be
// bit-identical to float32 accumulation in bag order, mean within rounding,
// and an SGD scatter within rounding of the coalesced update; empty bags
// pool to zeros, rows no bag names stay untouched, and rows outside a table
// are refused with plugin.ErrInvalidRequest. Rows with a Stride wider than
// Dim are read and updated in place, the floats past Dim left alone by SGD.
// Adagrad and row-wise Adagrad scatters, whose state lives past Dim, must
// match the update the sdk documents (a kernel may refuse an optimizer with
// plugin.ErrUnsupported). ExpandCoalesce must give each table's unique rows
// in ascending order with their gradients summed bit for bit in position
// order, and Apply after it must equal Scatter. An operator the kernel does
// not list must answer plugin.ErrUnsupported.
//
// Mock is a Kernel with function fields for tests of code that uses kernels.
package kerneltest

import (
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Option adjusts a conformance run.
type Option func(*config)

type config struct {
	options json.RawMessage
}

// WithOptions gives the kernel's own options (Setup.Options), as a JSON
// object.
func WithOptions(raw json.RawMessage) Option { return func(c *config) { c.options = raw } }

// suite is the kernel kind's conformance suite (sdk/internal/plugintest).
var suite = plugintest.Suite[kernel.Kernel, config, Option]{
	Kind: plugin.KindKernel, Server: kernel.ServerPlugin, Host: kernel.HostPlugin,
	Setup: config.setup, Contract: config.runContract,
}

// Run checks the kernel contract against kernels made by newImpl, each served
// over real gRPC in this process. Every subtest gets a fresh kernel.
func Run(t *testing.T, newImpl func() kernel.Kernel, opts ...Option) {
	t.Helper()
	suite.Run(t, newImpl, opts)
}

// RunBinary checks that the plugin binary at path answers "describe" as a
// kernel and honours the kernel contract, launched as a go-plugin subprocess for
// every subtest. It skips only when path is empty; a missing binary fails.
func RunBinary(t *testing.T, path string, opts ...Option) {
	t.Helper()
	suite.RunBinary(t, path, opts)
}
