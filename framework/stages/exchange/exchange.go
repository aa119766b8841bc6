// Package exchange is the stage that moves a batch's cache traffic over the
// link between host memory and the device: missed rows towards the device,
// evicted rows back. It charges the link's cost model for both directions
// and records the bytes per direction; the modeled time is labelled as such
// everywhere it is reported.
package exchange

import (
	"context"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/device"
)

type exchanger struct {
	set  stage.Settings
	name string // the graph's device name
	dev  device.Device
	// dedup is Config.DSF: false charges every missed lookup.
	dedup bool
}

func (e *exchanger) Process(ctx context.Context, b *batch.Batch) error {
	// A row crosses the link whole: values and optimizer state.
	rowBytes := int64(e.set.Layout.Stride) * 4
	// The rows collect staged (each missed row once per table) cross the
	// link; without a collect stage, or with dsf: false (HECA's no-DSF
	// baseline), every missed lookup is charged. The
	// graph refuses an exchange without a plan upstream; a batch without
	// plan's counts is an error, not a link that moved nothing in 0
	// modeled ns.
	missed, err := batch.Misses.Need(b, "exchange")
	if err != nil {
		return err
	}
	if staged, ok := batch.CollectedRows.Get(b); ok && e.dedup {
		missed = staged
	}
	victims, err := batch.VictimCount.Need(b, "exchange")
	if err != nil {
		return err
	}
	toDevice := missed * rowBytes
	toHost := victims * rowBytes
	// Both directions at once: "copies the GPU cache missed embeddings
	// from CPU→GPU while also simultaneously copying the evicted
	// embeddings from GPU→CPU over PCIe" (ScratchPipe Sec. IV-B), each at
	// the link's per-direction rate.
	ns, err := stage.ChargeConcurrent(ctx, b, e.name, e.dev,
		device.Op{Name: "rows-to-device", Kind: device.Transfer, Bytes: toDevice},
		device.Op{Name: "victims-to-host", Kind: device.Transfer, Bytes: toHost})
	if err != nil {
		return err
	}
	BytesToDevice.Set(b, toDevice)
	BytesToHost.Set(b, toHost)
	batch.ModeledNs.Set(b, ns)
	if !b.Eval {
		e.set.Metrics.Add("link.bytes_to_device", float64(toDevice))
		e.set.Metrics.Add("link.bytes_to_host", float64(toHost))
	}
	return nil
}

// create builds a exchange stage from its decoded config (NewFactory).
func create(_ context.Context, set stage.Settings, c *Config) (any, error) {
	d, err := set.Device("device", c.Device)
	return &exchanger{set: set, name: c.Device, dev: d, dedup: c.dedup()}, err
}
