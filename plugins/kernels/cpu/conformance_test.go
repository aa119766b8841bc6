package cpu_test

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/kernels/cpu"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/kernel/kerneltest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func TestConformance(t *testing.T) {
	kerneltest.Run(t, func() kernel.Kernel { return cpu.New() })
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/kernels/cpu/cmd/flowrun-kernel-cpu")
	kerneltest.RunBinary(t, bin)
}
