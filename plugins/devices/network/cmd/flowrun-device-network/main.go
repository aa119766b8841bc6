// Command flowrun-device-network serves the network device plugin out of
// process, for a graph that names it by path instead of builtin:network.
// Run it with the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/devices/network"
	"github.com/flowrun/flowrun/sdk/device"
)

func main() { device.Serve(network.New()) }
