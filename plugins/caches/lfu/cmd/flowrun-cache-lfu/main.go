// Command flowrun-cache-lfu serves the lfu cache plugin out of process, for a
// graph that names it by path instead of builtin:lfu. Run it with the
// single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/caches/lfu"
	"github.com/flowrun/flowrun/sdk/cache"
)

func main() { cache.Serve(lfu.New()) }
