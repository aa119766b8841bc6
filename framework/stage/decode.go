package stage

import (
	"errors"
	"strings"

	"github.com/go-viper/mapstructure/v2"

	"github.com/flowrun/flowrun/framework/config"
)

// decode fills cfg (a pointer) from options, rejecting unknown keys. Each
// unknown key is reported under its own path so the graph can point at its
// line.
func decode(options map[string]any, cfg Config) error {
	if len(options) == 0 {
		return nil
	}
	var md mapstructure.Metadata
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           cfg,
		Metadata:         &md,
		WeaklyTypedInput: false,
		DecodeHook:       mapstructure.StringToTimeDurationHookFunc(),
		TagName:          "mapstructure",
	})
	if err != nil {
		return err
	}
	var errs []error
	if err := dec.Decode(options); err != nil {
		errs = append(errs, err)
	}
	for _, key := range md.Unused {
		errs = append(errs, config.At(strings.ReplaceAll(key, ".", "::"), errors.New("unknown key")))
	}
	return errors.Join(errs...)
}
