package main

import (
	"fmt"
	"os"

	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// flowrun is its own host's pluginhost.BuiltinServer: started with
// pluginhost.BuiltinServerEnv=KIND:NAME it serves that builtin as a
// plugin process (a shadow policy niced in a process of its own) and
// does nothing else.

// builtinServer is this program as the host's builtin server; nil when
// its path cannot be found (builtins then run in process).
func builtinServer() *pluginhost.BuiltinServer {
	path, err := os.Executable()
	if err != nil {
		return nil
	}
	return &pluginhost.BuiltinServer{Path: path}
}

// serveBuiltin serves the builtin value names until the host lets it go,
// and returns the exit status.
func serveBuiltin(value string) int {
	kind, name, err := pluginhost.ServedBuiltin(value)
	if err == nil {
		err = serve(builtins(), kind, name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "flowrun:", err)
		return exitUsage
	}
	return exitOK
}

// serve serves kind's builtin name from b.
func serve(b pluginhost.Builtins, kind plugin.Kind, name string) error {
	missing := fmt.Errorf("no builtin %s plugin %q", kind, name)
	switch kind {
	case plugin.KindCache:
		if f, ok := b.Caches[name]; ok {
			cache.Serve(f())
			return nil
		}
	case plugin.KindKernel:
		if f, ok := b.Kernels[name]; ok {
			kernel.Serve(f())
			return nil
		}
	case plugin.KindModel:
		if f, ok := b.Models[name]; ok {
			model.Serve(f())
			return nil
		}
	case plugin.KindDevice:
		if f, ok := b.Devices[name]; ok {
			device.Serve(f())
			return nil
		}
	}
	return missing
}
