package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// BuiltinPrefix starts a reference to an in-process plugin.
const BuiltinPrefix = "builtin:"

// Ref is a parsed plugin reference.
type Ref struct {
	// Builtin is set for "builtin:NAME"; Name is then NAME.
	Builtin bool
	// Name is the builtin's name, or the base name of Path; spans are
	// named after it.
	Name string
	// Path is the plugin binary's path, as written (empty for a builtin).
	Path string
}

func (r Ref) String() string {
	if r.Builtin {
		return BuiltinPrefix + r.Name
	}
	return r.Path
}

// ParseRef parses a plugin reference: "builtin:NAME", or else the path of a
// plugin binary (absolute, or relative to the working directory; PATH is
// not searched).
func ParseRef(ref string) (Ref, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return Ref{}, errors.New("empty plugin reference")
	}
	if name, ok := strings.CutPrefix(ref, BuiltinPrefix); ok {
		if name == "" {
			return Ref{}, fmt.Errorf("plugin reference %q: no builtin name", ref)
		}
		return Ref{Builtin: true, Name: name}, nil
	}
	return Ref{Name: filepath.Base(ref), Path: ref}, nil
}

// Check validates a plugin reference of kind without launching anything: a
// builtin must be listed in the host's Builtins, a path must name an
// existing, regular, executable file whose sha256 matches its pin, if it
// has one (Pin).
func (h *Host) Check(kind plugin.Kind, ref string) error {
	if err := h.builtins.check(kind, ref); err != nil {
		return err
	}
	r, _ := ParseRef(ref) // check parsed it
	if r.Builtin {
		return nil
	}
	path, err := filepath.Abs(r.Path)
	if err != nil {
		return fmt.Errorf("%s plugin %q: %w", kind, r.Path, err)
	}
	if !h.pinned(path) {
		return nil // hashed, for its warning, only when it runs
	}
	_, _, err = h.checkPin(kind, path)
	return err
}

// RefChecker checks plugin references by the kind's name ("cache") as
// the graph builder asks (framework/graph.Plugins), with Host.Check.
type RefChecker struct{ Host *Host }

// Check parses kind and checks ref against the host.
func (c RefChecker) Check(kind, ref string) error {
	k, err := plugin.ParseKind(kind)
	if err != nil {
		return err
	}
	return c.Host.Check(k, ref)
}

// CheckSetup tries setup on the plugin ref names, if it is a builtin: it
// constructs a fresh instance, configures it and drops it (closing it if
// it is an io.Closer). That launches nothing, and the instance is not the
// one a run resolves, since every resolution calls the constructor anew.
// A plugin binary is not launched to try its options: for one, CheckSetup
// only does what Check does.
//
// The error is Configure's own, unwrapped, so that a joined error keeps
// its parts (one per rejected option); errors about ref itself are
// Check's.
func (h *Host) CheckSetup(ctx context.Context, kind plugin.Kind, ref string, setup plugin.Setup) error {
	if err := h.builtins.check(kind, ref); err != nil {
		return err
	}
	r, _ := ParseRef(ref) // check parsed it
	if !r.Builtin {
		return nil
	}
	p := h.builtins.construct(kind, r.Name)
	if c, ok := p.(io.Closer); ok {
		defer c.Close()
	}
	return p.Configure(ctx, setup)
}

// construct makes a new instance of kind's builtin name, which check has
// found.
func (b Builtins) construct(kind plugin.Kind, name string) plugin.Base {
	switch kind {
	case plugin.KindCache:
		return b.Caches[name]()
	case plugin.KindKernel:
		return b.Kernels[name]()
	case plugin.KindModel:
		return b.Models[name]()
	default:
		return b.Devices[name]()
	}
}

func (b Builtins) check(kind plugin.Kind, ref string) error {
	if !kind.Valid() {
		return fmt.Errorf("unknown plugin kind %q (want one of %v)", kind, plugin.Kinds)
	}
	r, err := ParseRef(ref)
	if err != nil {
		return fmt.Errorf("%s plugin: %w", kind, err)
	}
	if r.Builtin {
		if !b.Has(kind, r.Name) {
			return fmt.Errorf("%s plugin %q: no such builtin (builtins: %s)", kind, ref, strings.Join(b.Names(kind), ", "))
		}
		return nil
	}
	return checkExecutable(kind, r.Path)
}

func checkExecutable(kind plugin.Kind, path string) error {
	what := noun(kind)
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s %q: no such file (a plugin reference is builtin:NAME or the path of a plugin binary)", what, path)
	case err != nil:
		return fmt.Errorf("%s %q: %w", what, path, err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s %q: not a regular file", what, path)
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s %q: not executable", what, path)
	}
	return nil
}

// noun is "cache plugin" for a kind, "plugin" for none (a binary described
// or inspected before its kind is known).
func noun(kind plugin.Kind) string {
	if kind == "" {
		return "plugin"
	}
	return string(kind) + " plugin"
}
