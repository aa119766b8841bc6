package model

import "github.com/flowrun/flowrun/sdk/plugin"

// Validator is a model's typed options, which check themselves (joining
// every problem, each a plugin.FieldError where it concerns one key).
type Validator interface {
	Validate() error
}

// DecodeConfig decodes setup's options over defaults, refusing unknown
// keys (plugin.DecodeOptions), and validates the result: the first lines
// of a model's Configure.
func DecodeConfig[C Validator](setup plugin.Setup, defaults C) (C, error) {
	cfg := defaults
	if err := plugin.DecodeOptions(setup.Options, &cfg); err != nil {
		return defaults, err
	}
	if err := cfg.Validate(); err != nil {
		return defaults, err
	}
	return cfg, nil
}

// NewInfo is a model plugin's Info, its kind and API version filled in.
func NewInfo(name, version, description string, config []plugin.Field) plugin.Info {
	return plugin.NewInfo(plugin.KindModel, name, version, description, config)
}
