// Command flowrun-cache-mpcache serves the mpcache cache plugin out of
// process, for a graph that names it by path instead of builtin:mpcache.
// Run it with the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/caches/mpcache"
	"github.com/flowrun/flowrun/sdk/cache"
)

func main() { cache.Serve(mpcache.New()) }
