package ncf_test

import (
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/plugins/models/ncf"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/modeltest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

var opts = modeltest.WithOptions(json.RawMessage(`{"layers": [8, 4], "learning_rate": 0.5}`))

func TestConformance(t *testing.T) {
	modeltest.Run(t, func() model.Model { return ncf.New() }, opts)
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/models/ncf/cmd/flowrun-model-ncf")
	modeltest.RunBinary(t, bin, opts)
}
