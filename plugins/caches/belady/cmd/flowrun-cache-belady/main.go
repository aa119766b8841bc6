// Command flowrun-cache-belady serves the belady cache plugin out of
// process, for a graph that names it by path instead of builtin:belady.
// Run it with the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/caches/belady"
	"github.com/flowrun/flowrun/sdk/cache"
)

func main() { cache.Serve(belady.New()) }
