// Command testmodel serves the reference model of package testplugins, for
// the SDK's binary conformance tests.
package main

import (
	"github.com/flowrun/flowrun/sdk/internal/testplugins"
	"github.com/flowrun/flowrun/sdk/model"
)

func main() { model.Serve(testplugins.NewLogistic()) }
