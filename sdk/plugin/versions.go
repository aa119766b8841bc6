package plugin

import (
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
)

// Valid reports whether k is one of the four plugin kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindCache, KindKernel, KindModel, KindDevice:
		return true
	}
	return false
}

// ParseKind returns the Kind named s, or an error listing the kinds.
func ParseKind(s string) (Kind, error) {
	if k := Kind(s); k.Valid() {
		return k, nil
	}
	return "", fmt.Errorf("unknown plugin kind %q (want one of %v)", s, Kinds)
}

// VersionedPlugins builds the go-plugin versioned plugin map that serves (in
// a plugin binary) or dispenses (in a host) the given plugins at APIVersion,
// each under its kind's name, so a host dispenses a kind with
// client.Dispense(string(kind)). A plugin binary passes exactly one kind; a host passes every
// kind it may dispense. Adding a protocol version later means adding an
// entry here, so hosts and plugins of different SDK versions negotiate the
// newest one both speak.
func VersionedPlugins(ps map[Kind]goplugin.Plugin) map[int]goplugin.PluginSet {
	set := make(goplugin.PluginSet, len(ps))
	for k, p := range ps {
		set[string(k)] = p
	}
	return map[int]goplugin.PluginSet{APIVersion: set}
}
