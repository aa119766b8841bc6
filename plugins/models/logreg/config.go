package logreg

import (
	"errors"
	"fmt"
	"math"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Config is the model's options.
type Config struct {
	// LearningRate is the SGD step size for the weights and the bias.
	LearningRate float64 `json:"learning_rate"`
	// L2 is the weight decay: the gradient of (L2/2)·‖w‖² is added to the
	// weights' gradient (not to the bias's). The reported loss is the plain
	// binary cross-entropy.
	L2 float64 `json:"l2"`
}

func defaultConfig() Config { return Config{LearningRate: 0.05} }

// Validate checks the options and joins every problem found.
func (c Config) Validate() error {
	var errs []error
	if !(c.LearningRate > 0) || math.IsInf(c.LearningRate, 0) {
		errs = append(errs, fmt.Errorf("%w: learning_rate: must be a positive number, got %v", plugin.ErrInvalidConfig, c.LearningRate))
	}
	if !(c.L2 >= 0) || math.IsInf(c.L2, 0) {
		errs = append(errs, fmt.Errorf("%w: l2: must be a number ≥ 0, got %v", plugin.ErrInvalidConfig, c.L2))
	}
	return errors.Join(errs...)
}

func fields() []plugin.Field {
	return []plugin.Field{
		{Name: "learning_rate", Type: "float", Default: "0.05", Description: "SGD step size for weights and bias"},
		{Name: "l2", Type: "float", Default: "0", Description: "L2 weight decay on the weights (gradient l2·w); not on the bias"},
	}
}
