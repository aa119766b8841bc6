package main

import (
	"context"
	"errors"
	"sort"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
)

// locatedOpener is a run's plugin host with every error of opening a
// plugin marked with the graph key that names it. A binary that is no
// plugin, or serves another kind, is then an invalid graph like any other
// (exit 2, at its key and line), as it is for validate where validate
// opens the binary (the cache's); validate launches no other binary.
type locatedOpener struct {
	*pluginhost.Host
	cfg *config.Config
}

// openError is a plugin that did not open, at the key naming it.
type openError struct {
	key string
	err error
}

func (e *openError) Error() string { return e.err.Error() }
func (e *openError) Unwrap() error { return e.err }

func (o locatedOpener) Cache(ctx context.Context, ref string) (cache.Cache, error) {
	c, err := o.Host.Cache(ctx, ref)
	return c, located("cache::plugin", err)
}

func (o locatedOpener) Kernel(ctx context.Context, ref string) (kernel.Kernel, error) {
	k, err := o.Host.Kernel(ctx, ref)
	return k, located("kernel::plugin", err)
}

func (o locatedOpener) Model(ctx context.Context, ref string) (model.Model, error) {
	m, err := o.Host.Model(ctx, ref)
	return m, located("model::plugin", err)
}

// Device places the error at the first device (by name) naming ref.
func (o locatedOpener) Device(ctx context.Context, ref string) (device.Device, error) {
	d, err := o.Host.Device(ctx, ref)
	names := make([]string, 0, len(o.cfg.Devices))
	for name, p := range o.cfg.Devices {
		if p.Plugin == ref {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	key := "devices"
	if len(names) > 0 {
		key = "devices" + config.KeyDelimiter + names[0] + config.KeyDelimiter + "plugin"
	}
	return d, located(key, err)
}

func located(key string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, pluginhost.ErrClosed) {
		return err
	}
	return &openError{key: key, err: err}
}

// openFailure turns a run's error that is a plugin failing to open into an
// invalid graph's (a usage error) located in the graph file at path, read
// again with sets for its lines; other errors are returned as they are.
func openFailure(err error, path string, sets []string) error {
	var oe *openError
	if !errors.As(err, &oe) {
		return err
	}
	_, src, _ := config.LoadPartial(path, sets)
	return usageError{src.Annotate(config.At(oe.key, oe.err))}
}
