package main

import (
	"context"
	"io"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/pluginhost"
)

// newHost makes a plugin host for one run (or one validation); quiet
// (run -q) keeps its warnings (an unpinned binary, say) to errors only.
func newHost(tp trace.TracerProvider, stderr io.Writer, quiet bool) (*pluginhost.Host, error) {
	level := hclog.Warn
	if quiet {
		level = hclog.Error
	}
	return pluginhost.New(pluginhost.Settings{
		Builtins:       builtins(),
		TracerProvider: tp,
		Stderr:         stderr,
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: level, Output: stderr}),
		BuiltinServer:  builtinServer(), // servebuiltin.go
	})
}

// loadGraph reads, overrides, validates and builds a graph, then checks
// what only its plugins can judge (engine.Validate): the cache is opened
// and asked its Needs, and the graph checked against them. With
// tryOptions the built-in model, kernel and devices also try their
// options on throwaway instances; a run, which configures them right
// after, does without. Every problem is reported at once, each with
// file:line and key path: a graph whose tree has errors is still built, so
// that the builder's errors (a stage's options, references, the contract)
// come in the same report; only the plugins' own checks wait for a graph
// that builds.
func loadGraph(path string, sets []string, host *pluginhost.Host, tryOptions bool) (*graph.Graph, error) {
	cfg, src, err := config.LoadPartial(path, sets)
	if cfg == nil {
		return nil, usageError{err}
	}
	if pinErr := pinPlugins(host, cfg); pinErr != nil {
		err = config.Merge(err, src.Annotate(pinErr))
	}
	g, buildErr := buildGraph(cfg, src, host, err != nil)
	if err != nil || buildErr != nil {
		return nil, usageError{config.Merge(err, buildErr)}
	}
	var plugins engine.PluginOpener = host
	if !tryOptions {
		plugins = opener{host} // not a engine.SetupChecker
	}
	if err := engine.Validate(context.Background(), g, plugins); err != nil {
		return nil, usageError{src.Annotate(err)}
	}
	return g, nil
}

// buildGraph builds cfg. When cfg has errors already (invalid), the
// builder, which expects a valid config, may trip over a value config
// refused: a panic then adds nothing to the errors already found.
func buildGraph(cfg *config.Config, src *config.Source, host *pluginhost.Host, invalid bool) (g *graph.Graph, err error) {
	if invalid {
		defer func() {
			if recover() != nil {
				g, err = nil, nil
			}
		}()
	}
	return graph.Build(cfg, src, stages(), pluginhost.RefChecker{Host: host})
}

// opener is the host as a engine.PluginOpener only.
type opener struct{ engine.PluginOpener }
