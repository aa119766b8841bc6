package dlrm

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the model's options (the graph's model.options).
type Config struct {
	// Preset names the MLP shapes of one of the papers' models (see
	// presets.go and the README's table). An explicit BottomMLP or TopMLP
	// replaces that half of the preset; with both given, Preset may be
	// empty.
	Preset string `json:"preset"`
	// BottomMLP lists the widths of the bottom MLP's layers, first to last
	// (the input, the run's dense features, is not listed). Its last width
	// must equal the embedding dim, since the dot interaction multiplies
	// the bottom output with each pooled embedding.
	BottomMLP []int `json:"bottom_mlp"`
	// TopMLP lists the widths of the top MLP's layers, first to last (the
	// input, the interaction's output, is not listed); the last must be 1,
	// the logit.
	TopMLP []int `json:"top_mlp"`
	// Interaction is the feature interaction: "dot" (pairwise dot products
	// of the bottom output and the pooled embeddings, self-interaction off,
	// concatenated with the bottom output, as DLRM's reference does).
	Interaction string `json:"interaction"`
	// Optimizer updates the dense parameters: "sgd" or "adagrad".
	Optimizer string `json:"optimizer"`
	// LearningRate is the dense optimizer's step size.
	LearningRate float64 `json:"learning_rate"`
	// Epsilon is Adagrad's ε in w -= lr·g/(sqrt(G)+ε) (unused by SGD).
	Epsilon float64 `json:"epsilon"`
	// Threads caps the goroutines of each matrix product; 0 means
	// GOMAXPROCS. The result is the same for every value (sdk/model/gemm
	// splits only rows or columns of the output); it exists to pin the
	// model to a core count, e.g. against a peer framework held to one
	// thread while the graph's other stages run on another core.
	Threads int `json:"threads"`
}

// The defaults: DLRM's reference runs on Criteo (bench/dlrm_s_criteo_
// kaggle.sh and _terabyte.sh) train with SGD at learning rate 0.1.
const (
	defaultPreset       = "scratchpipe"
	defaultInteraction  = "dot"
	defaultOptimizer    = "sgd"
	defaultLearningRate = 0.1
	defaultEpsilon      = 1e-8
)

func defaultConfig() Config {
	return Config{
		Preset:       defaultPreset,
		Interaction:  defaultInteraction,
		Optimizer:    defaultOptimizer,
		LearningRate: defaultLearningRate,
		Epsilon:      defaultEpsilon,
	}
}

// Validate checks the options on their own (what the run's shape implies
// is checked by Configure) and joins every problem found.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{plugin.ErrInvalidConfig}, args...)...))
	}
	switch _, ok := lookupPreset(c.Preset); {
	case c.Preset == "" && (c.BottomMLP == nil || c.TopMLP == nil):
		bad("preset: empty: name a preset (%s) or give both bottom_mlp and top_mlp", strings.Join(presetNames(), ", "))
	case c.Preset != "" && !ok:
		bad("preset: unknown preset %q (want one of %s)", c.Preset, strings.Join(presetNames(), ", "))
	}
	checkWidths := func(key string, widths []int) {
		if widths == nil {
			return // not given: the preset's
		}
		if len(widths) == 0 {
			bad("%s: must list at least one layer width", key)
		}
		for i, w := range widths {
			if w < 1 {
				bad("%s[%d]: a layer width must be ≥ 1, got %d", key, i, w)
			}
		}
	}
	checkWidths("bottom_mlp", c.BottomMLP)
	checkWidths("top_mlp", c.TopMLP)
	if n := len(c.TopMLP); n > 0 && c.TopMLP[n-1] != 1 {
		bad("top_mlp: the last layer is the logit and must have width 1, got %d", c.TopMLP[n-1])
	}
	if c.Interaction != "dot" {
		bad("interaction: unknown interaction %q (want dot)", c.Interaction)
	}
	if c.Optimizer != "sgd" && c.Optimizer != "adagrad" {
		bad("optimizer: unknown optimizer %q (want sgd or adagrad)", c.Optimizer)
	}
	if !(c.LearningRate > 0) || math.IsInf(c.LearningRate, 0) {
		bad("learning_rate: must be a positive number, got %v", c.LearningRate)
	}
	if !(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0) {
		bad("epsilon: must be a positive number, got %v", c.Epsilon)
	}
	if c.Threads < 0 {
		bad("threads: must be ≥ 0 (0 = the CPUs available), got %d", c.Threads)
	}
	return errors.Join(errs...)
}

// shape is the MLPs a Config resolves to: the preset's, with an explicit
// bottom_mlp or top_mlp in place of that half.
func (c Config) shape() (p Preset) {
	p, _ = lookupPreset(c.Preset)
	if c.BottomMLP != nil {
		p.BottomMLP = c.BottomMLP
	}
	if c.TopMLP != nil {
		p.TopMLP = c.TopMLP
	}
	return p
}

func fields() []plugin.Field {
	return []plugin.Field{
		{Name: "preset", Type: "string", Default: defaultPreset, Description: "MLP shapes of a paper's model: " + strings.Join(presetNames(), ", ")},
		{Name: "bottom_mlp", Type: "[]int", Default: "the preset's", Description: "bottom MLP layer widths (input not listed); the last must equal the embedding dim"},
		{Name: "top_mlp", Type: "[]int", Default: "the preset's", Description: "top MLP layer widths (input not listed); the last must be 1"},
		{Name: "interaction", Type: "string", Default: defaultInteraction, Description: "feature interaction: dot (pairwise dots, no self-interaction, concatenated with the bottom output)"},
		{Name: "optimizer", Type: "string", Default: defaultOptimizer, Description: "dense optimizer: sgd or adagrad"},
		{Name: "learning_rate", Type: "float", Default: fmt.Sprint(defaultLearningRate), Description: "dense optimizer step size"},
		{Name: "epsilon", Type: "float", Default: fmt.Sprint(defaultEpsilon), Description: "Adagrad's ε: w -= lr·g/(sqrt(G)+ε)"},
		{Name: "threads", Type: "int", Default: "0", Description: "goroutines per matrix product, 0 = the CPUs available (at most GOMAXPROCS); the result is the same for every value"},
	}
}
