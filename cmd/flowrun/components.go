package main

import (
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/cast"
	"github.com/flowrun/flowrun/framework/stages/collect"
	"github.com/flowrun/flowrun/framework/stages/exchange"
	"github.com/flowrun/flowrun/framework/stages/filter"
	"github.com/flowrun/flowrun/framework/stages/insert"
	"github.com/flowrun/flowrun/framework/stages/load"
	"github.com/flowrun/flowrun/framework/stages/plan"
	"github.com/flowrun/flowrun/framework/stages/score"
	"github.com/flowrun/flowrun/framework/stages/shadow"
	"github.com/flowrun/flowrun/framework/stages/stale"
	"github.com/flowrun/flowrun/framework/stages/train"
	"github.com/flowrun/flowrun/plugins/caches/belady"
	"github.com/flowrun/flowrun/plugins/caches/heca"
	"github.com/flowrun/flowrun/plugins/caches/lfu"
	"github.com/flowrun/flowrun/plugins/caches/lru"
	"github.com/flowrun/flowrun/plugins/caches/mpcache"
	"github.com/flowrun/flowrun/plugins/caches/none"
	"github.com/flowrun/flowrun/plugins/caches/scratchpipe"
	"github.com/flowrun/flowrun/plugins/caches/static"
	"github.com/flowrun/flowrun/plugins/devices/cpudram"
	"github.com/flowrun/flowrun/plugins/devices/hbm"
	"github.com/flowrun/flowrun/plugins/devices/network"
	"github.com/flowrun/flowrun/plugins/devices/nmpdimm"
	"github.com/flowrun/flowrun/plugins/devices/nvmessd"
	"github.com/flowrun/flowrun/plugins/devices/rpaccel"
	"github.com/flowrun/flowrun/plugins/kernels/cpu"
	"github.com/flowrun/flowrun/plugins/models/dlrm"
	"github.com/flowrun/flowrun/plugins/models/logreg"
	"github.com/flowrun/flowrun/plugins/models/ncf"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
)

// stages lists every stage kind flowrun knows, explicitly.
func stages() stage.Registry {
	r, err := stage.NewRegistry(
		load.NewFactory(),
		plan.NewFactory(),
		collect.NewFactory(),
		exchange.NewFactory(),
		insert.NewFactory(),
		train.NewFactory(),
		cast.NewFactory(),
		score.NewFactory(),
		filter.NewFactory(),
		shadow.NewFactory(),
		stale.NewFactory(),
	)
	if err != nil {
		panic(err) // a programming error in this list, caught by every test
	}
	return r
}

// builtins lists every plugin linked into flowrun (plugin: builtin:NAME).
func builtins() pluginhost.Builtins {
	return pluginhost.Builtins{
		Caches: map[string]func() cache.Cache{
			"none":        none.New,
			"lru":         lru.New,
			"lfu":         lfu.New,
			"scratchpipe": scratchpipe.New,
			"static":      static.New,
			"belady":      belady.New,
			"heca":        heca.New,
			"mpcache":     mpcache.New,
		},
		Kernels: map[string]func() kernel.Kernel{
			"cpu": cpu.New,
		},
		Models: map[string]func() model.Model{
			"dlrm":   dlrm.New,
			"logreg": logreg.New,
			"ncf":    ncf.New,
		},
		Devices: map[string]func() device.Device{
			"cpu-dram": cpudram.New,
			"hbm":      hbm.New,
			"nmp-dimm": nmpdimm.New,
			"nvme-ssd": nvmessd.New,
			"network":  network.New,
			"rpaccel":  rpaccel.New,
		},
	}
}
