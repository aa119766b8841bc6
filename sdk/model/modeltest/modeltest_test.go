package modeltest_test

import (
	"testing"

	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/internal/testplugins"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/modeltest"
)

func TestConformance(t *testing.T) {
	modeltest.Run(t, func() model.Model { return testplugins.NewLogistic() })
}

func TestConformanceBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin binary")
	}
	bin := plugintest.Build(t, "github.com/flowrun/flowrun/sdk/internal/testplugins/cmd/testmodel")
	modeltest.RunBinary(t, bin)
}
