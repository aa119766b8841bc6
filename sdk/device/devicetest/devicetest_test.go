package devicetest_test

import (
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/devicetest"
	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/internal/testplugins"
)

func TestConformance(t *testing.T) {
	devicetest.Run(t, func() device.Device { return testplugins.NewLinear() })
}

func TestConformanceBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin binary")
	}
	bin := plugintest.Build(t, "github.com/flowrun/flowrun/sdk/internal/testplugins/cmd/testdevice")
	devicetest.RunBinary(t, bin)
}
