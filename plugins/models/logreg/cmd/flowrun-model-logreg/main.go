// Command flowrun-model-logreg serves the logreg model plugin out of
// process, for a graph that names it by path instead of builtin:logreg. Run
// it with the single argument "describe" to print its Info as JSON.
package main

import (
	"github.com/flowrun/flowrun/plugins/models/logreg"
	"github.com/flowrun/flowrun/sdk/model"
)

func main() { model.Serve(logreg.New()) }
