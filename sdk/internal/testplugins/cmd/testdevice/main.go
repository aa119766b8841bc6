// Command testdevice serves the reference device of package testplugins, for
// the SDK's binary conformance tests.
package main

import (
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/internal/testplugins"
)

func main() { device.Serve(testplugins.NewLinear()) }
