package config

import (
	"strings"
	"testing"
)

// dataset.kind: file needs dataset.path, and a path is read only by that
// kind: a stale path is never silently ignored.
func TestDatasetFileKindAndPath(t *testing.T) {
	for _, c := range []struct {
		kind, path string
		want       string // "" when valid
	}{
		{"file", "criteo.frb", ""},
		{"synthetic", "", ""},
		{"file", "", "path: must name a batch file when kind is file"},
		{"file", "  ", "path: must name a batch file"},
		{"synthetic", "criteo.frb", "path: is read only when kind is file, not synthetic"},
		{"parquet", "", `kind: unknown dataset kind "parquet" (allowed: synthetic, file)`},
	} {
		d := Default().Dataset
		d.Kind, d.Path = c.kind, c.path
		err := d.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("kind %q path %q: %v", c.kind, c.path, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("kind %q path %q: %v, want %q", c.kind, c.path, err, c.want)
		}
	}
}
