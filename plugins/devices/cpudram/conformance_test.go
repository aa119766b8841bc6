package cpudram_test

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/devices/cpudram"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func TestConformance(t *testing.T) {
	devicetest.Run(t, func() device.Device { return cpudram.New() })
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/devices/cpudram/cmd/flowrun-device-cpu-dram")
	devicetest.RunBinary(t, bin)
}

func TestConformanceCascadeLake(t *testing.T) {
	devicetest.Run(t, func() device.Device { return cpudram.New() }, devicetest.WithOptions([]byte(`{"profile": "cascade-lake"}`)))
}
