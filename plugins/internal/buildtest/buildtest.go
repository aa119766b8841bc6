// Package buildtest builds a plugin binary for a test, so that the
// conformance suites' RunBinary can check the same code out of process, as
// a go-plugin subprocess.
package buildtest

import (
	"os/exec"
	"path"
	"path/filepath"
	"testing"
)

// Binary runs `go build` for the main package pkg (an import path) into the
// test's temporary directory and returns the binary's path. It skips the
// test under -short, since building takes seconds rather than milliseconds.
func Binary(t *testing.T, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a plugin binary; skipped with -short")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build %s: %v", pkg, err)
	}
	out := filepath.Join(t.TempDir(), path.Base(pkg))
	cmd := exec.Command(gobin, "build", "-o", out, pkg)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
	return out
}
