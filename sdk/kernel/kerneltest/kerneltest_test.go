package kerneltest_test

import (
	"context"
	"testing"

	"github.com/flowrun/flowrun/sdk/internal/testplugins"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/kerneltest"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func TestConformance(t *testing.T) {
	kerneltest.Run(t, func() kernel.Kernel { return testplugins.NewKernel() })
}

// A kernel that lists no scatter must refuse it with ErrUnsupported; the
// mock's nil ScatterF does.
func TestConformanceGatherOnly(t *testing.T) {
	kerneltest.Run(t, func() kernel.Kernel {
		ref := testplugins.NewKernel()
		return &kerneltest.Mock{
			InfoF: func(context.Context) (plugin.Info, error) {
				return plugin.Info{Name: "gather-only", Ops: []string{kernel.OpGatherReduce}}, nil
			},
			ConfigureF:    ref.Configure,
			GatherReduceF: ref.GatherReduce,
		}
	})
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/sdk/internal/testplugins/cmd/testkernel")
	kerneltest.RunBinary(t, bin)
}
