package config

import (
	"errors"
	"fmt"
	"time"
)

// Timeout is how long a shard may take to answer one request.
func (s *Shards) Timeout() time.Duration {
	if s.TimeoutMs == 0 {
		return time.Second
	}
	return time.Duration(s.TimeoutMs) * time.Millisecond
}

// Wait is how long a run waits for external shards at its start.
func (s *Shards) Wait() time.Duration {
	if s.WaitS == 0 {
		return 30 * time.Second
	}
	return time.Duration(s.WaitS) * time.Second
}

// Shards partitions the host tables row-wise over table-shard processes
// (framework/shard, docs/scale-out.md#sharded-host-tables): each owns its rows' values
// and optimizer state, and the running process stages only the rows of
// the batches in flight. Absent, the host tables are the process's own.
type Shards struct {
	// Count is the number of table shards. With an embedded NATS server
	// flowrun run serves them in its own process (the same digest, not
	// the memory split); with nats.url (or --nats) it waits for Count
	// `flowrun shard` processes on that server.
	Count int `mapstructure:"count"`
	// TimeoutMs paces the wait for a shard's reply, in milliseconds (0:
	// 1000): the shard is asked every quarter of it whether it is still
	// there (one that is gone fails the run naming it), and one that is
	// there may take up to 30 times it.
	TimeoutMs int `mapstructure:"timeout_ms"`
	// WaitS is how long flowrun run waits, at the start, for external
	// shards to answer, in seconds (0: 30).
	WaitS int `mapstructure:"wait_s"`
	// Link, when set, names the device (devices:) whose cost model
	// charges the shard traffic on the modeled clock: a `network` device
	// (builtin:network, profiles 25gbe and 100gbe). Unset charges nothing.
	Link string `mapstructure:"link"`
}

// Validate checks the shard count and the durations.
func (s *Shards) Validate() error {
	var errs []error
	if s.Count < 1 || s.Count > 1024 {
		errs = append(errs, At("count", fmt.Errorf("%d: need 1 to 1024 table shards", s.Count)))
	}
	if s.TimeoutMs < 0 {
		errs = append(errs, At("timeout_ms", errors.New("must be ≥ 0")))
	}
	if s.WaitS < 0 {
		errs = append(errs, At("wait_s", errors.New("must be ≥ 0")))
	}
	return errors.Join(errs...)
}

// validateShards checks what shards needs of the rest of the graph.
func (c *Config) validateShards() []error {
	s := c.Shards
	if s == nil {
		return nil
	}
	var errs []error
	if s.Link != "" {
		if _, ok := c.Devices[s.Link]; !ok {
			errs = append(errs, At("shards::link", fmt.Errorf("no device %q in devices", s.Link)))
		}
	}
	if c.Embedding.Precision != "" && c.Embedding.Precision != "fp32" {
		errs = append(errs, At("shards", fmt.Errorf("sharded tables are FP32; embedding.precision is %s", c.Embedding.Precision)))
	}
	if c.Embedding.TablesDir != "" {
		errs = append(errs, At("shards", errors.New("sharded tables hold their rows in the shards; embedding.tables_dir is for one process's tables")))
	}
	return errs
}
