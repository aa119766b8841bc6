package insert_test

import (
	"math"
	"testing"

	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/results"
)

// The shipped mixed-precision graphs (graphs/mixed-precision.yaml: INT8,
// stochastic rounding, a 5 % 32-way LFU mpcache; graphs/mixed-precision-
// fp32.yaml: the FP32 reference) at a fixed seed, shortened to 20
// training batches and 4 held-out ones on the criteo-kaggle profile.
var mpShort = []string{"dataset.batches=20", "dataset.eval_batches=4"}

// runMP runs a shipped mixed-precision graph shortened by mpShort.
func runMP(t *testing.T, graph string, sets ...string) *results.Results {
	t.Helper()
	res, err := runGraph(t, graph, engine.HazardsOff, append(append([]string(nil), mpShort...), sets...)...)
	if err != nil {
		t.Fatalf("%s %v: %v", graph, sets, err)
	}
	return res
}

// TestMixedPrecisionGraphsOrder: the paper's ordering of precisions at one
// seed, in the held-out logloss (accuracy at a 0.5 threshold is too coarse
// at this size): the INT8 + 5 % cache graph ends next to FP32, INT2 with
// nearest rounding and no cache far from it. An FP32 cache holding every
// row (direct-mapped, as many sets as rows: never a victim or a bypass)
// over INT4 tables whose rows stay at their FP32 initial values until
// written trains in FP32 throughout and ends with the FP32 digest.
func TestMixedPrecisionGraphsOrder(t *testing.T) {
	t.Parallel()
	fp32 := runMP(t, "mixed-precision-fp32")
	int8 := runMP(t, "mixed-precision")
	int2 := runMP(t, "mixed-precision-fp32", "embedding.precision=int2", "embedding.rounding=nearest")
	if int8.Digest == fp32.Digest || int2.Digest == fp32.Digest {
		t.Fatal("a low-precision run ends with the FP32 digest: nothing was quantized")
	}
	if mc := int8.MemoryCompression; mc == nil || mc.Precision != "int8" || !(mc.Eq3 < 0.4) {
		t.Errorf("mixed-precision.yaml memory_compression %+v, want INT8 below 0.4 of FP32", mc)
	}
	for _, r := range []*results.Results{fp32, int8, int2} {
		if r.Metrics.LogLoss == nil {
			t.Fatalf("%s: no held-out logloss", r.Graph)
		}
	}
	ll32, ll8, ll2 := *fp32.Metrics.LogLoss, *int8.Metrics.LogLoss, *int2.Metrics.LogLoss
	d8, d2 := math.Abs(ll8-ll32), math.Abs(ll2-ll32)
	t.Logf("held-out logloss: FP32 %.5f, INT8 stochastic + 5 %% 32-way LFU %.5f (|Δ| %.5f), INT2 nearest %.5f (|Δ| %.5f)",
		ll32, ll8, d8, ll2, d2)
	if !(d2 > 0.002 && d2 > 5*d8) {
		t.Errorf("INT2 nearest is %.5f from FP32's logloss, INT8 + cache %.5f: want INT2 above 0.002 and 5× INT8", d2, d8)
	}

	whole := runMP(t, "mixed-precision", "embedding.precision=int4", "embedding.quantize_init=false",
		"cache.size=100000", "cache.options.ways=1")
	if whole.Cache == nil || whole.Cache.Evictions != 0 || whole.Cache.Misses == 0 {
		t.Fatalf("whole cache: stats %+v, want misses (first touches) and no evictions", whole.Cache)
	}
	if whole.Digest != fp32.Digest {
		t.Errorf("INT4 under a cache of every row: digest %s, want FP32's %s", whole.Digest, fp32.Digest)
	}
}
