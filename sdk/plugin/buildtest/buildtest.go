// Package buildtest builds a plugin binary for a test, so that a kind's
// conformance suite (cachetest.RunBinary, devicetest.RunBinary, ...) can
// check the same code out of process, as a go-plugin subprocess:
//
//	func TestConformanceBinary(t *testing.T) {
//		cachetest.RunBinary(t, buildtest.Binary(t, "example.com/my/policy/cmd/flowrun-cache-mine"))
//	}
//
// It imports only the standard library.
package buildtest

import (
	"os/exec"
	"path"
	"path/filepath"
	"testing"
)

// Binary runs `go build` for the main package pkg (an import path, or a
// ./relative directory resolved from the test's working directory) into
// the test's temporary directory and returns the binary's path. It skips the
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
