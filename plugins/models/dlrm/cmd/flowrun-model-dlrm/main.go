// Command flowrun-model-dlrm serves the dlrm model plugin out of process,
// for a graph that names it by path instead of builtin:dlrm. Run it with
// the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/models/dlrm"
	"github.com/flowrun/flowrun/sdk/model"
)

func main() { model.Serve(dlrm.New()) }
