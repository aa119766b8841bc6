package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginPin checks the form of a plugin binary's pin (its sum is the
// plugin host's to check): 64 hex digits, and only beside a path.
func TestPluginPin(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	dir := t.TempDir()
	path := filepath.Join(dir, "g.yaml")
	graph := "model:\n  plugin: ./bin/m\n  sha256: " + sum + "\ncache:\n  plugin: ./bin/c\n  sha256: " + strings.ToUpper(sum) +
		"\nstages:\n  load: {kind: load}\n"
	if err := os.WriteFile(path, []byte(graph), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model.SHA256 != sum || !strings.EqualFold(cfg.Cache.SHA256, sum) {
		t.Errorf("pins %q, %q", cfg.Model.SHA256, cfg.Cache.SHA256)
	}
	for _, c := range []struct{ set, want string }{
		{"model.sha256=abc", "model::sha256: \"abc\" is not a SHA-256 sum"},
		{"cache.sha256=" + strings.Repeat("zz", 32), "cache::sha256: \"zzzz"},
		{"kernel.sha256=" + sum, "kernel::sha256: pins a plugin binary, and builtin:cpu is linked into flowrun"},
	} {
		_, _, err := Load(path, []string{c.set})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %s: %v, want %q", c.set, err, c.want)
		}
	}
}
