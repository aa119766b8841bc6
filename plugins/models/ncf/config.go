package ncf

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the model's options (the graph's model.options).
type Config struct {
	// GMFDim is how many of each embedding's leading values are the GMF
	// path's latent factors; the rest are the MLP path's. 0: half the
	// tables' dim.
	GMFDim int `json:"gmf_dim"`
	// Layers lists the MLP tower's hidden widths, first to last (its
	// input, the user's and item's MLP factors concatenated, is not
	// listed). He et al.'s towers halve each layer (e.g. 32-16-8).
	Layers []int `json:"layers"`
	// LearningRate is SGD's step size for every dense parameter.
	LearningRate float64 `json:"learning_rate"`
}

func defaultConfig() Config { return Config{LearningRate: 0.1} }

// Validate checks the options and joins every problem found.
func (c Config) Validate() error {
	var errs []error
	if c.GMFDim < 0 {
		errs = append(errs, plugin.FieldErrorf("gmf_dim", "must be ≥ 0 (0: half the dim), got %d", c.GMFDim))
	}
	if len(c.Layers) == 0 || slices.ContainsFunc(c.Layers, func(w int) bool { return w < 1 }) {
		errs = append(errs, plugin.FieldErrorf("layers", "must list ≥ 1 widths, each ≥ 1, got %v", c.Layers))
	}
	if !(c.LearningRate > 0) || math.IsInf(c.LearningRate, 0) {
		errs = append(errs, plugin.FieldErrorf("learning_rate", "must be a positive number, got %v", c.LearningRate))
	}
	return errors.Join(errs...)
}

// split is the GMF and MLP shares of a dim-d embedding.
func (c Config) split(dim int) (gmf, mlp int, err error) {
	gmf = c.GMFDim
	if gmf == 0 {
		gmf = dim / 2
	}
	if gmf < 1 || gmf >= dim {
		return 0, 0, plugin.FieldErrorf("gmf_dim", "must leave both paths ≥ 1 factor of the tables' dim %d, got %d", dim, gmf)
	}
	return gmf, dim - gmf, nil
}

func fields() []plugin.Field {
	return []plugin.Field{
		{Name: "gmf_dim", Type: "int", Default: "0 (dim / 2)", Description: "leading values of each embedding that are GMF factors; the rest feed the MLP tower"},
		{Name: "layers", Type: "list of int", Default: "required", Description: "the MLP tower's hidden widths, e.g. [32, 16, 8]"},
		{Name: "learning_rate", Type: "float", Default: "0.1", Description: "SGD step size of every dense parameter"},
	}
}

// errShape is a Setup NCF cannot serve.
func errShape(format string, args ...any) error {
	return fmt.Errorf("%w: ncf: "+format, append([]any{plugin.ErrInvalidConfig}, args...)...)
}
