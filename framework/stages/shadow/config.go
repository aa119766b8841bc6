package shadow

import (
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/config"
)

// Config is the shadow stage's options.
type Config struct {
	// Policies are the what-if policies, each as the graph's cache section
	// names one (plugin, size, options; sha256 pins a binary).
	Policies []config.Cache `mapstructure:"policies"`
	// Device names the device whose link the shadows' traffic is costed
	// on (exchange's device); empty costs nothing.
	Device string `mapstructure:"device"`
	// Backlog is how many batches the shadows may fall behind the serving
	// path before the stage holds its producer back: their IDs wait in
	// the stage's own memory (8 B per ID each), not in the batch pool.
	Backlog int `mapstructure:"backlog"`
	// Nice is the niceness, 0 to 19, of the policies' plugin processes
	// (binaries, and builtins in their own process): at 19 the kernel
	// gives them only the CPU the serving path leaves.
	Nice int `mapstructure:"nice"`
	// OwnProcess runs a builtin policy in a process of its own, as its
	// binary would run (pluginhost.WithOwnProcess), so that it too is
	// niced; where the runtime has no server for builtins it runs in the
	// run's process.
	OwnProcess bool `mapstructure:"own_process"`
}

// DefaultBacklog lets niced shadows that get little CPU while the serving
// path runs fall that many batches behind before they hold it back, and
// catch up at the end; the ring never holds more than the run's batches.
const DefaultBacklog = 256

// defaultRingBytes bounds the ring the default backlog makes: 256 batches
// of IDs at a paper-scale shape (8 tables × 2048 × 20 lookups) would be
// 670 MiB of shared memory, so the default backlog holds fewer where its
// IDs would pass this. A backlog the graph sets is taken as it is.
const defaultRingBytes = 256 << 20

// DefaultNice runs out-of-process shadows on idle CPU only.
const DefaultNice = 19

// Validate checks every policy, each under its index.
func (c *Config) Validate() error {
	if len(c.Policies) == 0 {
		return config.At("policies", errors.New("name at least one policy (plugin and size)"))
	}
	var errs []error
	if c.Backlog < 0 {
		errs = append(errs, config.At("backlog", fmt.Errorf("must be ≥ 0, got %d", c.Backlog)))
	}
	if c.Nice < 0 || c.Nice > 19 {
		errs = append(errs, config.At("nice", fmt.Errorf("must be 0 to 19, got %d", c.Nice)))
	}
	for i, p := range c.Policies {
		errs = append(errs, config.At(fmt.Sprintf("policies%s%d", config.KeyDelimiter, i), p.Validate()))
	}
	return errors.Join(errs...)
}

// CachePolicies lists the policies for flowrun validate (stage.CacheUser).
func (c *Config) CachePolicies() (keys []string, policies []config.Cache) {
	for i := range c.Policies {
		keys = append(keys, fmt.Sprintf("policies%s%d", config.KeyDelimiter, i))
	}
	return keys, c.Policies
}

// DeviceNames lists the device the stage costs on, for the graph's checks.
func (c *Config) DeviceNames() []string {
	if c.Device == "" {
		return nil
	}
	return []string{c.Device}
}

// ModeledResources is empty: a shadow occupies no device on the run's
// modeled clock; its modeled time is a what-if, reported apart.
func (c *Config) ModeledResources() []string { return nil }
