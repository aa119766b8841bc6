package score

import (
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/kernel"
)

// Config is the score stage's options.
type Config struct {
	// Reduce pools a bag's rows: sum or mean.
	Reduce string `mapstructure:"reduce"`
	// HostDevice names the device whose memory holds the tables (the
	// gather is charged to it); empty charges nothing.
	HostDevice string `mapstructure:"host_device"`
	// ComputeDevice names the device that runs the dense model (its FLOPs
	// and the transfer of the pooled embeddings over its link are charged
	// to it); empty charges nothing.
	ComputeDevice string `mapstructure:"compute_device"`
	// Candidates is all (every candidate of the query) or topk (only the
	// survivors of an upstream filter: its topk entries, kept of them).
	Candidates string `mapstructure:"candidates"`
	// Model names the model under the graph's models that ranks, with its
	// own tables and dim; empty is the graph's model (model, dataset.dim).
	Model string `mapstructure:"model"`
}

// The candidate sets a score stage ranks.
const (
	// All ranks every candidate of the query.
	All = "all"
	// Survivors ranks only those an upstream filter kept.
	Survivors = "topk"
)

// Validate checks the options.
func (c *Config) Validate() error {
	var errs []error
	if _, err := kernel.ParseReduce(c.Reduce); err != nil {
		errs = append(errs, config.At("reduce", err))
	}
	if c.Candidates != All && c.Candidates != Survivors {
		errs = append(errs, config.At("candidates", fmt.Errorf("must be %s or %s, got %q", All, Survivors, c.Candidates)))
	}
	return errors.Join(errs...)
}

// ModelName is the model under the graph's models the stage ranks with,
// "" for the graph's own: the runtime hands the stage that model and its
// tables in its Settings.
func (c *Config) ModelName() string { return c.Model }

// BatchFields is what the stage reads beyond the loaded batch: with
// candidates: topk, the upstream filter's survivors.
func (c *Config) BatchFields() stage.Fields {
	if c.Candidates != Survivors {
		return stage.Fields{}
	}
	return stage.Fields{Consumes: []batch.Field{batch.TopK, batch.Kept}}
}

// DeviceNames lists the devices the stage uses, for the graph's checks.
func (c *Config) DeviceNames() []string {
	var names []string
	for _, d := range []string{c.HostDevice, c.ComputeDevice} {
		if d != "" {
			names = append(names, d)
		}
	}
	return names
}
