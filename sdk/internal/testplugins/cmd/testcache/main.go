// Command testcache serves the reference cache of package testplugins, for
// the SDK's binary conformance tests.
package main

import (
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/internal/testplugins"
)

func main() { cache.Serve(testplugins.NewLRU()) }
