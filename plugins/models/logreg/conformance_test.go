package logreg_test

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/models/logreg"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/modeltest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func TestConformance(t *testing.T) {
	modeltest.Run(t, func() model.Model { return logreg.New() })
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/models/logreg/cmd/flowrun-model-logreg")
	modeltest.RunBinary(t, bin)
}
