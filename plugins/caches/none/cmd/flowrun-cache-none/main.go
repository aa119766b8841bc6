// Command flowrun-cache-none serves the none cache plugin out of process, for a
// graph that names it by path instead of builtin:none. Run it with the
// single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/caches/none"
	"github.com/flowrun/flowrun/sdk/cache"
)

func main() { cache.Serve(none.New()) }
