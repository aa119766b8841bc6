package plugintest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// Build compiles the main package pkg (an import path or a ./relative
// directory, resolved from the test's working directory) into t's temporary
// directory and returns the binary's path.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}
