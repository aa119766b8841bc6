// Command flowrun-device-nmp-dimm serves the nmp-dimm device plugin out of
// process, for a graph that names it by path instead of builtin:nmp-dimm.
// Run it with the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/devices/nmpdimm"
	"github.com/flowrun/flowrun/sdk/device"
)

func main() { device.Serve(nmpdimm.New()) }
