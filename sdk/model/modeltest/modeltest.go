// Package modeltest is the conformance suite for model plugins. A model's
// tests call Run with a constructor, which checks the contract of
// sdk/model over real gRPC in process, and RunBinary with the path of the
// built plugin binary, which checks it against the binary launched as a
// go-plugin subprocess:
//
//	func TestConformance(t *testing.T) {
//		modeltest.Run(t, func() model.Model { return dlrm.New() })
//	}
//
// The suite trains on a fixed, linearly separable synthetic batch and
// checks that the loss goes down, that the pooled-embedding gradient is
// written and finite, that a forward-only step changes nothing, and that
// Digest is a sha256 that depends only on the Setup's seed and the steps
// taken.
//
// Mock is a Model with function fields for tests of code that uses models.
package modeltest

import (
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Option adjusts a conformance run.
type Option func(*config)

type config struct {
	options json.RawMessage
	steps   int
}

// WithOptions gives the model's own options (Setup.Options), as a JSON
// object: a preset, a learning rate that trains in a few steps, ...
func WithOptions(raw json.RawMessage) Option { return func(c *config) { c.options = raw } }

// WithTrainSteps sets how many training steps on the synthetic batch must
// lower the loss (default 20).
func WithTrainSteps(n int) Option { return func(c *config) { c.steps = n } }

// suite is the model kind's conformance suite (sdk/internal/plugintest).
var suite = plugintest.Suite[model.Model, config, Option]{
	Kind: plugin.KindModel, Server: model.ServerPlugin, Host: model.HostPlugin,
	Defaults: config{steps: 20},
	Setup:    func(c config, _ testing.TB) plugin.Setup { return c.setup(setupSeed) },
	Contract: config.runContract,
}

// Run checks the model contract against models made by newImpl, each served
// over real gRPC in this process. Every instance gets a fresh model.
func Run(t *testing.T, newImpl func() model.Model, opts ...Option) {
	t.Helper()
	suite.Run(t, newImpl, opts)
}

// RunBinary checks that the plugin binary at path answers "describe" as a
// model and honours the model contract, launched as a go-plugin subprocess for
// every instance. It skips only when path is empty; a missing binary fails.
func RunBinary(t *testing.T, path string, opts ...Option) {
	t.Helper()
	suite.RunBinary(t, path, opts)
}
