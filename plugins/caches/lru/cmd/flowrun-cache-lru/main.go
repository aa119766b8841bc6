// Command flowrun-cache-lru serves the lru cache plugin out of process, for a
// graph that names it by path instead of builtin:lru. Run it with the
// single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/caches/lru"
	"github.com/flowrun/flowrun/sdk/cache"
)

func main() { cache.Serve(lru.New()) }
