package load

// Config is the load stage's options. The dataset itself (shape, locality,
// number of batches) is the graph's dataset section.
type Config struct {
	// Eval says whether to append the dataset's held-out batches after the
	// training batches, for evaluation by the train stage.
	Eval bool `mapstructure:"eval"`
}

// Validate has nothing to check: every value of Eval is valid.
func (c *Config) Validate() error { return nil }
