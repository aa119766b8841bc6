// Command testkernel serves the reference kernel of package testplugins, for
// the SDK's binary conformance tests.
package main

import (
	"github.com/flowrun/flowrun/sdk/internal/testplugins"
	"github.com/flowrun/flowrun/sdk/kernel"
)

func main() { kernel.Serve(testplugins.NewKernel()) }
