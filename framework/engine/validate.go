package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/resources"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// SetupChecker tries a Setup on a fresh instance of a built-in plugin and
// drops it, launching nothing (pluginhost.Host.CheckSetup; a plugin
// binary's options are left to the run).
type SetupChecker interface {
	CheckSetup(ctx context.Context, kind plugin.Kind, ref string, setup plugin.Setup) error
}

// Validate checks, on a graph Build accepted, what only its plugins can
// judge, with the Setups a run gives them, and has no side effects: the
// cache (built in or a binary) is opened and asked its Needs, which
// decode and check its options, and the graph is checked against them
// (graph.CheckCache); when host is also a SetupChecker, the built-in
// model, kernel and devices try their options. No data is read (no
// warm-up profile), and no table, Storage or region is created. What a
// run will need is checked against the machine (CheckResources), as Run
// does before it builds. Errors are located with config.At: an option's at its key when the plugin
// names it (plugin.FieldError), else at the plugin's options.
func Validate(ctx context.Context, g *graph.Graph, host PluginOpener) error {
	shape, err := NewShape(g)
	if err != nil {
		return err
	}
	runID := NewRunID()
	checker, _ := host.(SetupChecker)
	errs := []error{CheckResources(g, shape, resources.Machine())}
	for _, p := range pluginRefs(g.Config) {
		if p.kind == plugin.KindCache {
			errs = append(errs, validateCache(ctx, g, host, shape, runID))
			continue
		}
		if checker == nil {
			continue
		}
		setup, err := shape.Setup(runID, p.options)
		if err == nil {
			err = checker.CheckSetup(ctx, p.kind, p.ref, setup)
		}
		errs = append(errs, p.optionErrors(err))
	}
	errs = append(errs, validateStageCaches(ctx, g, host, shape, runID))
	errs = append(errs, checkModels(ctx, g, shape, runID, checker))
	return errors.Join(errs...)
}

// validateStageCaches checks the policies stages open beside the run's
// cache (stage.CacheUser) as validateCache checks the graph's, each as if
// it were the graph's cache, at its key under the stage.
func validateStageCaches(ctx context.Context, g *graph.Graph, host PluginOpener, shape *Shape, runID string) error {
	var errs []error
	for _, n := range g.Nodes {
		u, ok := n.Options.(stage.CacheUser)
		if !ok || host == nil {
			continue
		}
		keys, policies := u.CachePolicies()
		for i, c := range policies {
			as := *g.Config
			as.Cache = c
			ag := *g
			ag.Config = &as
			at := "stages" + config.KeyDelimiter + n.Name + config.KeyDelimiter + keys[i] + config.KeyDelimiter + "plugin"
			if err := validateCache(ctx, &ag, host, shape, runID); err != nil {
				errs = append(errs, config.At(at, fmt.Errorf("as the graph's cache: %s", strings.ReplaceAll(err.Error(), "\n", "; "))))
			}
		}
	}
	return errors.Join(errs...)
}

// validateCache opens the cache, asks its Needs and checks g against
// them.
func validateCache(ctx context.Context, g *graph.Graph, host PluginOpener, shape *Shape, runID string) error {
	p := cacheRef(g.Config)
	if host == nil || p.ref == "" {
		return nil // Build and config.Validate report them
	}
	c, err := host.Cache(ctx, p.ref)
	if err != nil {
		return config.At("cache::plugin", err)
	}
	if cl, ok := c.(io.Closer); ok {
		defer cl.Close()
	}
	opts := cacheSetupOptions(g)
	needs, err := cacheNeeds(ctx, c, shape, runID, opts)
	if err != nil {
		return p.optionErrors(err)
	}
	return graph.CheckCache(g, needs)
}

// optionErrors places the errors a plugin gave for its options (joined,
// one per option) under its section, each named after the plugin.
func (p pluginRef) optionErrors(err error) error {
	var errs []error
	for _, e := range config.Errors(err) {
		errs = append(errs, config.At(p.optionPath(e.Err), fmt.Errorf("%s plugin %q: %w", p.kind, p.ref, e.Err)))
	}
	return errors.Join(errs...)
}

// optionPath places err at the option it is about when the graph gives
// that option (so the error has the option's line, or names the --set
// flag that gave it), else at the options as a whole. The plugin names
// the option with a *plugin.FieldError.
func (p pluginRef) optionPath(err error) string {
	path := p.section + config.KeyDelimiter + "options"
	key, ok := plugin.FieldOf(err)
	if !ok {
		return path
	}
	first, _, _ := strings.Cut(key, config.KeyDelimiter)
	for k := range p.options {
		if strings.EqualFold(k, first) {
			return path + config.KeyDelimiter + key
		}
	}
	return path
}
