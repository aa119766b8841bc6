// Command flowrun-cache-static serves the static cache plugin out of
// process, for a graph that names it by path instead of builtin:static.
// Run it with the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/caches/static"
	"github.com/flowrun/flowrun/sdk/cache"
)

func main() { cache.Serve(static.New()) }
