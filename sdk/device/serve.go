package device

import (
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Serve runs impl as a plugin binary; call it from main. Run with the single
// argument "describe", the binary prints impl's Info as JSON and exits;
// otherwise it serves impl over go-plugin's gRPC protocol and returns when
// the host is done with it. Started by hand rather than by a flowrun host,
// the binary says so on stderr and exits with status 1.
func Serve(impl Device) {
	rpc.Serve(plugin.KindDevice, impl, ServerPlugin(impl))
}
