// Package configtest runs graph files that must be rejected against the
// errors they list, for the tests of config and of the packages that
// check graphs further (graph).
//
// It is for tests only and imports only framework/config.
package configtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
)

// WantPrefix starts the comment lines of a bad graph file that list the
// errors it must produce: `# want: SUBSTRING`, one line per error.
const WantPrefix = "# want: "

// BadFiles runs a subtest for every file matching glob: load reads (and
// builds) the file and returns its error; every want of the file must
// match one of the errors (config.Errors), there must be no other error,
// and every error must name the file. check, if not nil, is called with
// each error for the caller's own checks.
func BadFiles(t *testing.T, glob string, load func(t *testing.T, file string) error, check func(t *testing.T, e *config.Error)) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files match %s", glob)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var wants []string
			for _, line := range strings.Split(string(text), "\n") {
				if w, ok := strings.CutPrefix(strings.TrimSpace(line), WantPrefix); ok {
					wants = append(wants, w)
				}
			}
			got := config.Errors(load(t, file))
			var list strings.Builder
			for _, e := range got {
				list.WriteString("  " + e.Error() + "\n")
			}
			if len(got) != len(wants) {
				t.Errorf("got %d errors, want %d:\n%s", len(got), len(wants), list.String())
			}
			for _, w := range wants {
				found := false
				for _, e := range got {
					found = found || strings.Contains(e.Error(), w)
				}
				if !found {
					t.Errorf("no error contains %q; got:\n%s", w, list.String())
				}
			}
			for _, e := range got {
				if e.File != file {
					t.Errorf("error not in %s: %#v", file, e)
				}
				if check != nil {
					check(t, e)
				}
			}
		})
	}
}
