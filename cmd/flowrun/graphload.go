package main

import (
	"io"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// newHost makes a plugin host for one run (or one validation).
func newHost(tp trace.TracerProvider, stderr io.Writer) (*pluginhost.Host, error) {
	return pluginhost.New(pluginhost.Settings{
		Builtins:       builtins(),
		TracerProvider: tp,
		Stderr:         stderr,
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Warn, Output: stderr}),
	})
}

// loadGraph reads, overrides, validates and builds a graph; every problem
// is reported at once, each with file:line and key path.
func loadGraph(path string, sets []string, host *pluginhost.Host) (*graph.Graph, error) {
	cfg, src, err := config.Load(path, sets)
	if err != nil {
		return nil, usageError{err}
	}
	resolvePluginPaths(cfg, filepath.Dir(path))
	g, err := graph.Build(cfg, src, stages(), pluginChecker{host})
	if err != nil {
		return nil, usageError{err}
	}
	return g, nil
}

// resolvePluginPaths makes relative plugin binary paths relative to the
// graph file's directory, so a graph works from any working directory.
func resolvePluginPaths(cfg *config.Config, dir string) {
	fix := func(ref *string) {
		if *ref == "" || strings.HasPrefix(*ref, pluginhost.BuiltinPrefix) || filepath.IsAbs(*ref) {
			return
		}
		*ref = filepath.Join(dir, *ref)
	}
	fix(&cfg.Model.Plugin)
	fix(&cfg.Kernel.Plugin)
	fix(&cfg.Cache.Plugin)
	for name, d := range cfg.Devices {
		fix(&d.Plugin)
		cfg.Devices[name] = d
	}
}

// pluginChecker adapts the plugin host to the graph's checks.
type pluginChecker struct{ host *pluginhost.Host }

func (p pluginChecker) Check(kind, ref string) error {
	k, err := plugin.ParseKind(kind)
	if err != nil {
		return err
	}
	return p.host.Check(k, ref)
}
