// Command flowrun-device-nvme-ssd serves the nvme-ssd device plugin out of
// process, for a graph that names it by path instead of builtin:nvme-ssd.
// Run it with the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/devices/nvmessd"
	"github.com/flowrun/flowrun/sdk/device"
)

func main() { device.Serve(nvmessd.New()) }
