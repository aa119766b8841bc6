package stale

import (
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/stage"
)

// Config is the stale stage's options.
type Config struct {
	// Staleness is how many updates old the rows a batch trains on may be
	// (HECA Sec. 4.3): 0, exact synchronous training (the stage does
	// nothing), or 1, each row batch b-1 updated is read by b as it was
	// before that update, while b's update still lands on the live row.
	Staleness int `mapstructure:"staleness"`
	// Source is where the trainer's rows are: storage (the cache's slots,
	// the plan's slots say which) or host (the host tables), as train's.
	Source string `mapstructure:"source"`
}

// The values of Source (train's).
const (
	SourceHost    = "host"
	SourceStorage = "storage"
)

// Validate checks the options.
func (c *Config) Validate() error {
	if c.Staleness != 0 && c.Staleness != 1 {
		return config.At("staleness", fmt.Errorf("must be 0 (exact) or 1 (a batch reads rows one update old), got %d", c.Staleness))
	}
	if c.Source != SourceHost && c.Source != SourceStorage {
		return config.At("source", fmt.Errorf("must be %s or %s, got %q", SourceHost, SourceStorage, c.Source))
	}
	return nil
}

// BatchFields: with source: storage the stage finds rows by the plan's
// slots.
func (c *Config) BatchFields() stage.Fields {
	if c.Source == SourceStorage {
		return stage.Fields{Consumes: []batch.Field{batch.Slots}}
	}
	return stage.Fields{}
}

// UsesStorage tells the runtime that the stage works on Storage.
func (c *Config) UsesStorage() bool { return c.Source == SourceStorage }
