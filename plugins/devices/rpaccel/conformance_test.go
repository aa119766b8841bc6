package rpaccel_test

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/devices/rpaccel"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

// Each profile, and the backend of a split design, keeps the device
// contract, in process and as a binary.
var configs = map[string]string{
	"rpaccel":     ``,
	"rpaccel-8-2": `{"arrays": [8, 2], "stage": 1}`,
	"centaur":     `{"profile": "centaur"}`,
}

func TestConformance(t *testing.T) {
	for name, opts := range configs {
		t.Run(name, func(t *testing.T) {
			devicetest.Run(t, func() device.Device { return rpaccel.New() }, devicetest.WithOptions([]byte(opts)))
		})
	}
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/devices/rpaccel/cmd/flowrun-device-rpaccel")
	for name, opts := range configs {
		t.Run(name, func(t *testing.T) { devicetest.RunBinary(t, bin, devicetest.WithOptions([]byte(opts))) })
	}
}
