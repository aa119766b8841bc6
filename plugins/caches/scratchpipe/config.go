package scratchpipe

import (
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/plankit"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// The windows of ScratchPipe's 6-stage pipeline (Sec. IV-C): the three
// batches between [Collect] and [Train], and the two between [Collect] and
// [Insert].
const (
	DefaultPastWindow   = 3
	DefaultFutureWindow = 2
)

// The victim choices among un-held slots.
const (
	VictimLRU    = "lru"
	VictimLFU    = "lfu"
	VictimRandom = "random"
)

// Config is the ScratchPipe policy's options.
type Config struct {
	// Options are what the host fills: capacity (Storage slots per table)
	// and its windows, which the policy's own windows default to.
	cache.Options
	// PastWindow is how many batches planned before the current one keep
	// their slots held (RAW hazards 2 and 3). Unset: the host's past
	// window, or DefaultPastWindow when the host sends none.
	PastWindow *int `json:"past_window"`
	// FutureWindow is how many of the future batches sent with a request
	// keep their cached rows held (RAW hazard 4). Unset: the host's future
	// window, or DefaultFutureWindow when the host sends none.
	FutureWindow *int `json:"future_window"`
	// Victim chooses among un-held slots: lru, lfu or random (seeded from
	// the run's seed).
	Victim string `json:"victim"`
}

func defaultConfig() Config { return Config{Victim: VictimLRU} }

// Windows resolves the past and future windows.
func (c Config) Windows() (past, future int) {
	past, future = DefaultPastWindow, DefaultFutureWindow
	if c.Past > 0 {
		past = c.Past
	}
	if c.Future > 0 {
		future = c.Future
	}
	if c.PastWindow != nil {
		past = *c.PastWindow
	}
	if c.FutureWindow != nil {
		future = *c.FutureWindow
	}
	return past, future
}

// Validate checks the options, joining every error.
func (c Config) Validate() error {
	var errs plugin.FieldErrors
	plankit.CheckHost(c.Options, &errs)
	past, future := c.Windows()
	if past < 0 {
		errs.Add("past_window", "must be ≥ 0, got %d", past)
	}
	if future < 0 {
		errs.Add("future_window", "must be ≥ 0, got %d", future)
	}
	if past >= 0 && future >= 0 && past+1+future > 64 {
		// Two keys at fault: no FieldError.
		errs = append(errs, fmt.Errorf("%w: past_window + 1 + future_window: the Hold mask has 64 bits, got %d", plugin.ErrInvalidConfig, past+1+future))
	}
	if c.FutureWindow != nil && c.Future > 0 && *c.FutureWindow > c.Future {
		errs.Add("future_window", "%d, but the host sends only %d future batches (future); raise the graph's future window or lower future_window", *c.FutureWindow, c.Future)
	}
	switch c.Victim {
	case VictimLRU, VictimLFU, VictimRandom:
	default:
		errs.Add("victim", "must be lru, lfu or random, got %q", c.Victim)
	}
	return errs.Err()
}

func fields() []plugin.Field {
	return []plugin.Field{
		{Name: "capacity", Type: "int", Description: "Storage slots per table (≥ 1; the host fills it from the graph's cache.size); must hold the distinct rows of past_window+1+future_window batches"},
		{Name: "past_window", Type: "int", Default: "the host's past, else 3", Description: "batches before the current one whose slots are held (RAW hazards 2, 3)"},
		{Name: "future_window", Type: "int", Default: "the host's future, else 2", Description: "future batches whose cached rows are held (RAW hazard 4); at most the host's future"},
		{Name: "victim", Type: "string", Default: VictimLRU, Description: "victim among un-held slots: lru, lfu (ties by LRU) or random (seeded from the run's seed)"},
		{Name: "past", Type: "int", Default: "0", Description: "the host's past window (filled by the host)"},
		{Name: "future", Type: "int", Default: "0", Description: "future batches the host sends with each request (filled by the host)"},
	}
}
