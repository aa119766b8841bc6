package pluginhost

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// BuiltinServerEnv names the environment variable with which the host
// launches its BuiltinServer: its value is "KIND:NAME", the builtin the
// process must serve (ServedBuiltin reads it back).
const BuiltinServerEnv = "FLOWRUN_SERVE_BUILTIN"

// BuiltinServer is a binary that serves any of the host's builtins as a
// plugin process when started with BuiltinServerEnv (flowrun itself): with
// it, a builtin asked for under WithOwnProcess runs in a process of its
// own, as a binary would, instead of in the host's.
type BuiltinServer struct {
	// Path is the binary's absolute path (os.Executable). It is the
	// host's own program, so it is not pinned.
	Path string
}

// ownProcessKey marks a context asking for builtins in their own process.
type ownProcessKey struct{}

// WithOwnProcess returns ctx asking that a builtin resolved with it run
// in a process of its own, served by the host's BuiltinServer, so that it
// can be niced (WithNice) or crash alone; a host without a BuiltinServer
// resolves it in process as ever.
func WithOwnProcess(ctx context.Context) context.Context {
	return context.WithValue(ctx, ownProcessKey{}, true)
}

// ownProcess says whether builtin r should run in a process of its own.
func (h *Host) ownProcess(ctx context.Context, r Ref) bool {
	own, _ := ctx.Value(ownProcessKey{}).(bool)
	return own && r.Builtin && h.server != nil
}

// serverEnv is the environment entry that makes the BuiltinServer serve
// kind's builtin name.
func serverEnv(kind plugin.Kind, name string) string {
	return fmt.Sprintf("%s=%s:%s", BuiltinServerEnv, kind, name)
}

// ServedBuiltin is the kind and name of the builtin this process was
// started to serve, from the value of BuiltinServerEnv ("" when none):
// a BuiltinServer's main checks it first and serves that builtin.
func ServedBuiltin(value string) (plugin.Kind, string, error) {
	kind, name, ok := strings.Cut(value, ":")
	if !ok || name == "" {
		return "", "", fmt.Errorf("%s=%q: want KIND:NAME", BuiltinServerEnv, value)
	}
	return plugin.Kind(kind), name, nil
}
