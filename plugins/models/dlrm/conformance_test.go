package dlrm_test

import (
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/plugins/models/dlrm"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/modeltest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

// The suite's run has 3 tables of dim 4 and 4 dense features: RecPipe's
// RMsmall (bottom output 4) fits it as it is.
var (
	rmsmall = json.RawMessage(`{"preset": "rmsmall"}`)
	adagrad = json.RawMessage(`{"bottom_mlp": [8, 4], "top_mlp": [8, 4, 1], "optimizer": "adagrad", "learning_rate": 0.05}`)
)

func TestConformance(t *testing.T) {
	modeltest.Run(t, func() model.Model { return dlrm.New() }, modeltest.WithOptions(rmsmall))
}

func TestConformanceAdagrad(t *testing.T) {
	modeltest.Run(t, func() model.Model { return dlrm.New() }, modeltest.WithOptions(adagrad))
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/models/dlrm/cmd/flowrun-model-dlrm")
	modeltest.RunBinary(t, bin, modeltest.WithOptions(rmsmall))
}
