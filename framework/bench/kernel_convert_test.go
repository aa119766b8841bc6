package bench

import (
	"context"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// convertKernel is a fake kernel whose conversions are the SDK's reference.
type convertKernel struct {
	fakeKernel
	m region.Mapper
}

func (k *convertKernel) Quantize(_ context.Context, req *kernel.ConvertRequest) (*kernel.Result, error) {
	return kernel.Convert(&k.m, req, true)
}

func (k *convertKernel) Dequantize(_ context.Context, req *kernel.ConvertRequest) (*kernel.Result, error) {
	return kernel.Convert(&k.m, req, false)
}

// TestRunKernelConvert: quantize and dequantize run on low-precision
// tables of the asked precision, report the kernel's traffic, and a STREAM
// copy of the same bytes measured in the same run.
func TestRunKernelConvert(t *testing.T) {
	defer func(n int64) { streamMinBytes = n }(streamMinBytes)
	streamMinBytes = 1 << 20
	for _, op := range []string{kernel.OpQuantize, kernel.OpDequantize} {
		for _, p := range []string{"fp16", "int8", "int4", "int2"} {
			c := smallKernel(op)
			c.Precision, c.Rounding = p, "stochastic"
			k := &convertKernel{}
			res, err := RunKernel(context.Background(), k, c)
			k.m.Close()
			if err != nil {
				t.Fatalf("%s %s: %v", op, p, err)
			}
			n := int64(c.Tables * c.Batch * c.Lookups)
			if res.BytesRead == 0 || res.BytesWritten == 0 || res.RowBytes != n*int64(c.Dim)*4 {
				t.Errorf("%s %s: result %+v", op, p, res)
			}
			if !(res.StreamCopyGBps > 0) || !(res.StreamRatio > 0) {
				t.Errorf("%s %s: no STREAM copy figure: %+v", op, p, res)
			}
		}
	}
	c := smallKernel(kernel.OpQuantize)
	c.Precision, c.Rounding = "int8", "nearest"
	if _, err := RunKernel(context.Background(), &fakeKernel{InfoF: func(context.Context) (plugin.Info, error) { return plugin.Info{}, nil }}, c); err == nil {
		t.Error("a kernel without the conversions was benchmarked")
	}
}
