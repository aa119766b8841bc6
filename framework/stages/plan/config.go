package plan

// Config is the plan stage's options. The policy and its size are the
// graph's cache section.
type Config struct{}

// Validate has nothing to check.
func (c *Config) Validate() error { return nil }
