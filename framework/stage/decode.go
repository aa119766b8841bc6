package stage

import "github.com/flowrun/flowrun/framework/config"

// decode fills cfg (a pointer holding the defaults) from a stage's options
// with the graph file's own rules: unknown keys and wrong types are errors,
// each under its key path so the graph can point at its line.
func decode(options map[string]any, cfg Config) error {
	if len(options) == 0 {
		return nil
	}
	return config.Decode(options, cfg)
}
