// Command flowrun-device-rpaccel serves the rpaccel device plugin (RecPipe's
// RPAccel and its Centaur-like baseline, modeled) out of process, for a
// graph that names it by path instead of builtin:rpaccel. Run it with the
// single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/devices/rpaccel"
	"github.com/flowrun/flowrun/sdk/device"
)

func main() { device.Serve(rpaccel.New()) }
