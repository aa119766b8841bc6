// Command flowrun-model-ncf serves the ncf model plugin out of process,
// for a graph that names it by path instead of builtin:ncf. Run it with
// the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/models/ncf"
	"github.com/flowrun/flowrun/sdk/model"
)

func main() { model.Serve(ncf.New()) }
