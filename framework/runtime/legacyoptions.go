package runtime

// TEMPORARY: this file goes when every built-in plugin reports a bad
// option as a *plugin.FieldError (sdk/plugin/field.go), which names its
// key without a message to parse. Until then the built-ins write
// "KEY: reason" after plugin.ErrInvalidConfig, or let encoding/json name
// the field; delete this file and the call in pluginRef.optionPath.

import (
	"regexp"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// legacyOptionNamed finds the option a plain configure error is about.
var legacyOptionNamed = []*regexp.Regexp{
	regexp.MustCompile(`^` + regexp.QuoteMeta(plugin.ErrInvalidConfig.Error()) + `: ([\w.-]+(?:::[\w.-]+)*): `),
	regexp.MustCompile(`unknown field "([^"]+)"`),
	regexp.MustCompile(`Go struct field \w*\.(\w+)`),
}

// legacyOptionKeys are the keys a plain error's message may name, most
// likely first.
func legacyOptionKeys(err error) []string {
	var keys []string
	for _, re := range legacyOptionNamed {
		if m := re.FindStringSubmatch(err.Error()); m != nil {
			keys = append(keys, m[1])
		}
	}
	return keys
}
