// Command flowrun-device-cpu-dram serves the cpu-dram device plugin out of
// process, for a graph that names it by path instead of builtin:cpu-dram. Run
// it with the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/devices/cpudram"
	"github.com/flowrun/flowrun/sdk/device"
)

func main() { device.Serve(cpudram.New()) }
