// Command flowrun-cache-clock is an example third-party cache plugin: the
// CLOCK (second-chance) policy of package clock, written only against
// flowrun's sdk/ and the standard library, the way an author outside the
// project would write one. Build it, check it, and name its binary in a
// graph:
//
//	go build -o bin/flowrun-cache-clock ./examples/cache-plugin
//	./bin/flowrun-cache-clock describe
//
//	cache: {plugin: ./bin/flowrun-cache-clock, size: 0.05}
package main

import (
	"github.com/flowrun/flowrun/examples/cache-plugin/clock"
	"github.com/flowrun/flowrun/sdk/cache"
)

// main hands the policy to the SDK, which speaks go-plugin's gRPC protocol
// with the host (or prints Info as JSON for "describe").
func main() { cache.Serve(clock.New()) }
