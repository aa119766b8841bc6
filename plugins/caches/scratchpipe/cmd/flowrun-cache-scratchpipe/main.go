// Command flowrun-cache-scratchpipe serves the scratchpipe cache plugin out
// of process, for a graph that names it by path instead of
// builtin:scratchpipe. Run it with the single argument "describe" to print
// its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/caches/scratchpipe"
	"github.com/flowrun/flowrun/sdk/cache"
)

func main() { cache.Serve(scratchpipe.New()) }
