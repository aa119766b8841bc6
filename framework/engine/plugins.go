package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// pluginRef is one plugin the graph names: its role in the run ("model",
// "devices.gpu"), the config section it comes from ("devices::gpu"), its
// reference and its options.
type pluginRef struct {
	kind    plugin.Kind
	role    string
	device  string // the device's name under devices, for a device
	section string
	ref     string
	options map[string]any
}

// pluginRefs lists the plugins cfg names, in the order a run opens and
// configures them: model, kernel, cache, then the devices by name.
func pluginRefs(cfg *config.Config) []pluginRef {
	refs := []pluginRef{
		{kind: plugin.KindModel, role: "model", section: "model", ref: cfg.Model.Plugin, options: cfg.Model.Options},
		{kind: plugin.KindKernel, role: "kernel", section: "kernel", ref: cfg.Kernel.Plugin, options: cfg.Kernel.Options},
		cacheRef(cfg),
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Devices)) {
		d := cfg.Devices[name]
		refs = append(refs, pluginRef{kind: plugin.KindDevice, role: "devices." + name, device: name,
			section: "devices" + config.KeyDelimiter + name, ref: d.Plugin, options: d.Options})
	}
	return refs
}

// cacheRef is the cache plugin cfg names.
func cacheRef(cfg *config.Config) pluginRef {
	return pluginRef{kind: plugin.KindCache, role: "cache", section: "cache", ref: cfg.Cache.Plugin, options: cfg.Cache.Options}
}

// openPlugins opens every plugin the graph names, unconfigured; the error
// joins every one that failed to open.
func openPlugins(ctx context.Context, host PluginOpener, cfg *config.Config) (stage.Plugins, error) {
	ps := stage.Plugins{Devices: make(map[string]device.Device, len(cfg.Devices))}
	if host == nil {
		return ps, errors.New("no plugin host")
	}
	var errs []error
	for _, p := range pluginRefs(cfg) {
		var err error
		switch p.kind {
		case plugin.KindModel:
			ps.Model, err = host.Model(ctx, p.ref)
		case plugin.KindKernel:
			ps.Kernel, err = host.Kernel(ctx, p.ref)
		case plugin.KindCache:
			ps.Cache, err = host.Cache(ctx, p.ref)
		default:
			var d device.Device
			if d, err = host.Device(ctx, p.ref); err == nil {
				ps.Devices[p.device] = d
			}
		}
		if err != nil {
			// At the reference's key, as validation places its errors; the
			// host's error names the kind and the binary.
			errs = append(errs, config.At(p.section+config.KeyDelimiter+"plugin", err))
		}
	}
	return ps, errors.Join(errs...)
}

// configurePlugins configures every opened plugin with the Setup of its
// options, the cache with cacheOpts (its own and the host's), and records
// what each is.
func configurePlugins(ctx context.Context, ps stage.Plugins, shape *Shape, runID string, cacheOpts map[string]any) ([]results.PluginUse, error) {
	var uses []results.PluginUse
	var errs []error
	for _, p := range pluginRefs(shape.Config) {
		var base plugin.Base
		options := p.options
		switch p.kind {
		case plugin.KindModel:
			base = ps.Model
		case plugin.KindKernel:
			base = ps.Kernel
		case plugin.KindCache:
			base, options = ps.Cache, cacheOpts
		default:
			base = ps.Devices[p.device]
		}
		use, err := configure(ctx, base, p, shape, runID, options)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uses = append(uses, use)
	}
	return uses, errors.Join(errs...)
}

// configure configures one plugin and asks what it is.
func configure(ctx context.Context, p plugin.Base, ref pluginRef, shape *Shape, runID string, options map[string]any) (results.PluginUse, error) {
	setup, err := shape.Setup(runID, options)
	if err != nil {
		return results.PluginUse{}, fmt.Errorf("%s plugin %q: %w", ref.role, ref.ref, err)
	}
	if err := p.Configure(ctx, setup); err != nil {
		return results.PluginUse{}, fmt.Errorf("%s plugin %q: configure: %w", ref.role, ref.ref, err)
	}
	info, err := p.Info(ctx)
	if err != nil {
		return results.PluginUse{}, fmt.Errorf("%s plugin %q: info: %w", ref.role, ref.ref, err)
	}
	r, _ := pluginhost.ParseRef(ref.ref) // the host has resolved it
	use := results.PluginUse{Kind: string(ref.kind), Role: ref.role, Ref: ref.ref, Name: info.Name, Remote: !r.Builtin}
	if d, ok := p.(device.Device); ok {
		// What the device models, for the summary: the hardware, not the plugin.
		if prof, err := d.Profile(ctx); err == nil {
			use.Profile, use.Servers = prof.Name, prof.Servers
		}
	}
	return use, nil
}
