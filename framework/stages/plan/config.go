package plan

import (
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/config"
)

// The windows of ScratchPipe's six-stage pipeline (Sec. IV-C): the three
// batches between [Collect] and the end of [Train], and the two between
// [Collect] and [Insert].
const (
	DefaultPastWindow   = 3
	DefaultFutureWindow = 2
)

// MaxWindow bounds past_window + 1 + future_window: the Hold mask and the
// hazard checker follow 64 batches.
const MaxWindow = 64

// Config is the plan stage's options. The policy and its size are the
// graph's cache section; the windows are the pipeline's, which the plan
// stage serves to the policy.
type Config struct {
	// PastWindow is how many batches before batch b may still be between
	// [Collect] and the end of [Train] when b's collect reads its victims
	// out of Storage. The runtime sends it to the cache policy as
	// cache.Options.Past in a pipelined graph with Storage (0 otherwise:
	// one batch at a time has no past in flight).
	PastWindow int `mapstructure:"past_window"`
	// FutureWindow is how many later batches' IDs plan waits for and sends
	// with each request (cache.PlanRequest.Future, cache.Options.Future):
	// the batches whose [Collect] may run before b's [Insert] writes b's
	// victims back. The loader runs this far ahead of plan, no further.
	FutureWindow int `mapstructure:"future_window"`
	// Device names the device that holds the policy's index (ScratchPipe's
	// Hit-Map lives on the GPU): the IDs' copy to it and the index's
	// queries and updates are charged to it. Empty charges nothing.
	Device string `mapstructure:"device"`
}

// DeviceNames lists the devices the stage uses, for the graph's checks.
func (c *Config) DeviceNames() []string {
	if c.Device == "" {
		return nil
	}
	return []string{c.Device}
}

// Validate checks the windows.
func (c *Config) Validate() error {
	var errs []error
	if c.PastWindow < 0 {
		errs = append(errs, config.At("past_window", fmt.Errorf("must be ≥ 0, got %d", c.PastWindow)))
	}
	if c.FutureWindow < 0 {
		errs = append(errs, config.At("future_window", fmt.Errorf("must be ≥ 0, got %d", c.FutureWindow)))
	}
	if c.PastWindow >= 0 && c.FutureWindow >= 0 && c.PastWindow+1+c.FutureWindow > MaxWindow {
		errs = append(errs, config.At("past_window", fmt.Errorf("past_window + 1 + future_window = %d: at most %d batches (the Hold mask's bits)",
			c.PastWindow+1+c.FutureWindow, MaxWindow)))
	}
	return errors.Join(errs...)
}

// Windows is the pipeline's past and future windows, for the runtime (the
// cache's options) and the graph's checks (scratchpad sizing, credits).
func (c *Config) Windows() (past, future int) { return c.PastWindow, c.FutureWindow }
