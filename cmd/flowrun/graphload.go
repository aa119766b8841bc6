package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/runtime"
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
// is reported at once, each with file:line and key path. With tryOptions
// the builtin plugins are also configured with their options, once, and
// dropped (optionChecker); a run, which configures them right after,
// does without.
func loadGraph(path string, sets []string, host *pluginhost.Host, tryOptions bool) (*graph.Graph, error) {
	cfg, src, err := config.Load(path, sets)
	if err != nil {
		return nil, usageError{err}
	}
	resolvePluginPaths(cfg, filepath.Dir(path))
	var plugins graph.Plugins = pluginChecker{host}
	if tryOptions {
		plugins = optionChecker{pluginChecker{host}}
	}
	g, err := graph.Build(cfg, src, stages(), plugins)
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

// optionChecker is a pluginChecker that also tries the builtins' options
// (graph.PluginOptions).
type optionChecker struct{ pluginChecker }

// CheckOptions configures every builtin plugin of g with the Setup a run
// gives it (runtime.PluginSetup, runtime.CacheOptions) and reports what
// they reject at the plugin's options, before anything runs. Plugin
// binaries are not launched to try theirs: a run is the first to.
func (p optionChecker) CheckOptions(g *graph.Graph) error {
	ctx := context.Background()
	cfg := g.Config
	runID := runtime.NewRunID()
	var errs []error
	try := func(key string, kind plugin.Kind, ref string, given, options map[string]any) {
		setup, err := runtime.PluginSetup(cfg, runID, options)
		if err == nil {
			err = p.host.CheckSetup(ctx, kind, ref, setup)
		}
		for _, e := range config.Errors(err) {
			errs = append(errs, config.At(optionPath(key, given, e.Err), fmt.Errorf("%s plugin %q: %w", kind, ref, e.Err)))
		}
	}
	if isBuiltin(cfg.Model.Plugin) {
		try("model", plugin.KindModel, cfg.Model.Plugin, cfg.Model.Options, cfg.Model.Options)
	}
	if isBuiltin(cfg.Kernel.Plugin) {
		try("kernel", plugin.KindKernel, cfg.Kernel.Plugin, cfg.Kernel.Options, cfg.Kernel.Options)
	}
	// Only for a builtin cache: the host's options may cost a warm-up
	// pass over the first batches (a static cache's frequencies).
	if isBuiltin(cfg.Cache.Plugin) {
		opts, release, err := runtime.CacheOptions(g)
		if err != nil {
			errs = append(errs, config.At("cache::options", err))
		} else {
			try("cache", plugin.KindCache, cfg.Cache.Plugin, cfg.Cache.Options, opts)
			release()
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Devices)) {
		d := cfg.Devices[name]
		if isBuiltin(d.Plugin) {
			try("devices::"+name, plugin.KindDevice, d.Plugin, d.Options, d.Options)
		}
	}
	return errors.Join(errs...)
}

func isBuiltin(ref string) bool {
	r, err := pluginhost.ParseRef(ref)
	return err == nil && r.Builtin
}

// optionNamed finds the option a plugin's configure error is about: the
// builtins write "KEY: reason" (or "KEY::SUBKEY: reason") after
// plugin.ErrInvalidConfig, and encoding/json names an unknown field or the
// field a value of the wrong type was meant for.
var optionNamed = []*regexp.Regexp{
	regexp.MustCompile(`^` + regexp.QuoteMeta(plugin.ErrInvalidConfig.Error()) + `: ([\w.-]+(?:::[\w.-]+)*): `),
	regexp.MustCompile(`unknown field "([^"]+)"`),
	regexp.MustCompile(`Go struct field \w*\.(\w+)`),
}

// optionPath places err under the plugin's section key: at the option it
// names when the graph gives that option (so the error has the option's
// line, or names the --set flag that gave it), else at the options as a
// whole.
func optionPath(key string, given map[string]any, err error) string {
	path := key + config.KeyDelimiter + "options"
	for _, re := range optionNamed {
		m := re.FindStringSubmatch(err.Error())
		if m == nil {
			continue
		}
		first, _, _ := strings.Cut(m[1], config.KeyDelimiter)
		for k := range given {
			if strings.EqualFold(k, first) {
				return path + config.KeyDelimiter + m[1]
			}
		}
	}
	return path
}
