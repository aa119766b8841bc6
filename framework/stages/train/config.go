package train

import (
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/internal/staleness"
	"github.com/flowrun/flowrun/sdk/kernel"
)

// Config is the train stage's options.
type Config struct {
	// LearningRate is the SGD step for embedding rows.
	LearningRate float64 `mapstructure:"learning_rate"`
	// Reduce pools a bag's rows: sum or mean.
	Reduce string `mapstructure:"reduce"`
	// HostDevice names the device whose memory holds the tables (gather
	// and scatter are charged to it); empty charges nothing.
	HostDevice string `mapstructure:"host_device"`
	// ComputeDevice names the device that runs the dense model (its FLOPs
	// and the transfer of pooled embeddings and their gradients over its
	// link are charged to it); empty charges nothing.
	ComputeDevice string `mapstructure:"compute_device"`
	// Source is where the rows are gathered from and scattered to: host
	// (the host tables) or storage (the device-side cache rows, indexed by
	// the batch's slots; needs collect and insert upstream).
	Source string `mapstructure:"source"`
	// Backward is how the pooled gradients are coalesced per row before
	// the optimizer update: coalesce (expand-coalesce, Tensor Casting's
	// Alg. 1, fused with the update in the kernel's scatter) or cast (the
	// casted gather-reduce, Alg. 3, over the arrays a cast stage upstream
	// wrote into the batch; needs reduce: sum and source: host).
	Backward string `mapstructure:"backward"`
	// BackwardDevice names the device coalescing is charged to (the
	// casted gather-reduce, or expand-coalesce as a separate kernel call
	// before the update); empty charges it with the update to HostDevice.
	BackwardDevice string `mapstructure:"backward_device"`
	// Staleness is HECA's bounded staleness (Sec. 4.3), done by train
	// itself so that it holds in a pipelined graph: 0, exact (the
	// default), or 1, batch b trains on each row batch b-1 updated as it
	// was before that update, and b's update still lands on the live row
	// (stale.go).
	Staleness int `mapstructure:"staleness"`
}

// Validate checks the options.
func (c *Config) Validate() error {
	var errs []error
	if !(c.LearningRate > 0) {
		errs = append(errs, config.At("learning_rate", fmt.Errorf("must be > 0, got %v", c.LearningRate)))
	}
	if _, err := kernel.ParseReduce(c.Reduce); err != nil {
		errs = append(errs, config.At("reduce", err))
	}
	if c.Source != SourceHost && c.Source != SourceStorage {
		errs = append(errs, config.At("source", fmt.Errorf("must be %s or %s, got %q", SourceHost, SourceStorage, c.Source)))
	}
	if c.Staleness != 0 && c.Staleness != 1 {
		errs = append(errs, config.At("staleness", fmt.Errorf("must be 0 (exact) or 1 (a batch reads rows one update old), got %d", c.Staleness)))
	}
	switch c.Backward {
	case BackwardCoalesce:
	case BackwardCast:
		if c.Reduce != "sum" {
			errs = append(errs, config.At("backward", fmt.Errorf("cast needs reduce: sum (the casted gather-reduce does not scale by bag length), got %q", c.Reduce)))
		}
		if c.Source != SourceHost {
			errs = append(errs, config.At("backward", fmt.Errorf("cast needs source: %s, got %q", SourceHost, c.Source)))
		}
	default:
		errs = append(errs, config.At("backward", fmt.Errorf("must be %s or %s, got %q", BackwardCoalesce, BackwardCast, c.Backward)))
	}
	return errors.Join(errs...)
}

// The values of Source.
const (
	SourceHost    = "host"
	SourceStorage = "storage"
)

// BatchFields is what train reads beyond the loaded batch: with source:
// storage the plan's slots (the rows' places in Storage), with backward:
// cast the cast stage's arrays; with staleness 1 it also writes the stat
// stale_rows.
func (c *Config) BatchFields() stage.Fields {
	var f stage.Fields
	if c.Source == SourceStorage {
		f.Consumes = append(f.Consumes, batch.Slots)
	}
	if c.Backward == BackwardCast {
		f.Consumes = append(f.Consumes, batch.CastSrc, batch.CastDst, batch.CastRows)
	}
	if c.Staleness > 0 {
		f.Produces = append(f.Produces, staleness.StaleRows)
	}
	return f
}

// UsesStorage tells the runtime to create the run's Storage.
func (c *Config) UsesStorage() bool { return c.Source == SourceStorage }

// DeviceNames lists the devices the stage uses, for the graph's checks.
func (c *Config) DeviceNames() []string {
	var names []string
	for _, d := range []string{c.HostDevice, c.ComputeDevice, c.BackwardDevice} {
		if d != "" {
			names = append(names, d)
		}
	}
	return names
}
