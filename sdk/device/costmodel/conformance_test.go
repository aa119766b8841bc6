package costmodel_test

import (
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/costmodel"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
)

// A device with no named profile at all, its profile given whole in the
// options as a graph's YAML gives it, honours the device contract.
func TestConformanceInlineProfile(t *testing.T) {
	spec := costmodel.Spec{Name: "yaml-only", Description: "a device whose profile the graph gives"}
	devicetest.Run(t, func() device.Device { return costmodel.New(spec) }, devicetest.WithOptions(json.RawMessage(
		`{"profile": {"name": "My part", "bandwidth_gbps": 100, "efficiency": 0.5, "gflops": 1000, "link": "pcie4"}}`)))
}
