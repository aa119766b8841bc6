// Command flowrun-cache-clock serves the example CLOCK policy as a plugin
// binary (scripts/build.sh builds it into bin/); a graph names its path.
package main

import (
	"github.com/flowrun/flowrun/examples/cache-plugin/clock"
	"github.com/flowrun/flowrun/sdk/cache"
)

func main() { cache.Serve(clock.New()) }
