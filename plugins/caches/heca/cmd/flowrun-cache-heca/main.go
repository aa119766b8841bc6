// Command flowrun-cache-heca serves the heca cache plugin out of process,
// for a graph that names it by path instead of builtin:heca. Run it with
// the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/caches/heca"
	"github.com/flowrun/flowrun/sdk/cache"
)

func main() { cache.Serve(heca.New()) }
