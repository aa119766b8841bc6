// Command flowrun-device-hbm serves the hbm device plugin out of
// process, for a graph that names it by path instead of builtin:hbm. Run
// it with the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/devices/hbm"
	"github.com/flowrun/flowrun/sdk/device"
)

func main() { device.Serve(hbm.New()) }
