// Command echo serves the echo test cache as a plugin binary.
package main

import (
	"github.com/flowrun/flowrun/framework/pluginhost/internal/echo"
	"github.com/flowrun/flowrun/sdk/cache"
)

func main() { cache.Serve(echo.New()) }
