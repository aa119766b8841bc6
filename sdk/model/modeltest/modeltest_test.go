package modeltest_test

import (
	"testing"

	"github.com/flowrun/flowrun/sdk/internal/testplugins"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/modeltest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func TestConformance(t *testing.T) {
	modeltest.Run(t, func() model.Model { return testplugins.NewLogistic() })
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/sdk/internal/testplugins/cmd/testmodel")
	modeltest.RunBinary(t, bin)
}
