package config_test

import (
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/config/configtest"
)

// TestLoadBad loads every file under testdata/bad. Each lists the errors it
// must produce in `# want: SUBSTRING` comments, one per error: every want
// must match an error and there must be no other error.
func TestLoadBad(t *testing.T) {
	configtest.BadFiles(t, "testdata/bad/*.yaml", func(t *testing.T, file string) error {
		_, _, err := config.Load(file, nil)
		return err
	}, nil)
}
