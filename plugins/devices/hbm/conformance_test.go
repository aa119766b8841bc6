package hbm_test

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/devices/hbm"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func TestConformance(t *testing.T) {
	devicetest.Run(t, func() device.Device { return hbm.New() })
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/devices/hbm/cmd/flowrun-device-hbm")
	devicetest.RunBinary(t, bin)
}

func TestConformanceT4(t *testing.T) {
	devicetest.Run(t, func() device.Device { return hbm.New() }, devicetest.WithOptions([]byte(`{"profile": "t4"}`)))
}
