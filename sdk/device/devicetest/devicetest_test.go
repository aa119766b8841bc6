package devicetest_test

import (
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
	"github.com/flowrun/flowrun/sdk/internal/testplugins"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func TestConformance(t *testing.T) {
	devicetest.Run(t, func() device.Device { return testplugins.NewLinear() })
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/sdk/internal/testplugins/cmd/testdevice")
	devicetest.RunBinary(t, bin)
}
