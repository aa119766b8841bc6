package pluginhost

import (
	"maps"
	"slices"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Builtins lists the plugins linked into the binary, by kind and name, as
// constructors; "builtin:NAME" in a graph picks one. The CLI fills it
// explicitly (cmd/flowrun/components.go); nothing registers itself.
// Every resolution calls the constructor anew, so each user gets its own
// instance.
type Builtins struct {
	Caches  map[string]func() cache.Cache
	Kernels map[string]func() kernel.Kernel
	Models  map[string]func() model.Model
	Devices map[string]func() device.Device
}

// Names returns the builtin names of kind, sorted.
func (b Builtins) Names(kind plugin.Kind) []string {
	var names []string
	switch kind {
	case plugin.KindCache:
		names = slices.Collect(maps.Keys(b.Caches))
	case plugin.KindKernel:
		names = slices.Collect(maps.Keys(b.Kernels))
	case plugin.KindModel:
		names = slices.Collect(maps.Keys(b.Models))
	case plugin.KindDevice:
		names = slices.Collect(maps.Keys(b.Devices))
	}
	slices.Sort(names)
	return names
}

// Has reports whether kind has a builtin called name.
func (b Builtins) Has(kind plugin.Kind, name string) bool {
	return slices.Contains(b.Names(kind), name)
}
