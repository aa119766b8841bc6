// Command flowrun-kernel-cpu serves the cpu kernel plugin out of process, for a
// graph that names it by path instead of builtin:cpu. Run it with the
// single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/kernels/cpu"
	"github.com/flowrun/flowrun/sdk/kernel"
)

func main() { kernel.Serve(cpu.New()) }
