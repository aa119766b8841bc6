package insert_test

import (
	"fmt"
	"testing"

	"github.com/flowrun/flowrun/framework/engine"
)

// Low-precision host tables (embedding.precision) through the stages that
// read and write host rows: load's first touch, collect's staging of
// missed rows, insert's write-back of victims, train's FP32 staging of
// low-precision rows (source: host, and rows a static cache bypasses) and
// Storage's flush. Packed and emulated storage hold the same numbers, so
// every graph ends with the same digest either way; precision fp32 is the
// plain run; a table under lowprec_min_rows is FP32.
func TestPackedAndEmulatedEndWithTheSameDigest(t *testing.T) {
	t.Parallel()
	combos := []struct {
		graph, precision, rounding, optimizer string
		quantizeInit                          bool
	}{
		{"no-cache", "int8", "stochastic", "sgd", true},
		{"no-cache", "int4", "nearest", "rowwise_adagrad", false},
		{"no-cache", "fp16", "stochastic", "adagrad", true},
		{"static-cache", "int2", "stochastic", "sgd", false},
		{"scratchpipe", "int4", "stochastic", "adagrad", true},
		{"scratchpipe", "int8", "nearest", "sgd", false},
	}
	for _, c := range combos {
		t.Run(fmt.Sprintf("%s/%s/%s/%s/init=%v", c.graph, c.precision, c.rounding, c.optimizer, c.quantizeInit), func(t *testing.T) {
			t.Parallel()
			sets := append(workload("zipf", 3, 8, fmt.Sprint(worstCase), c.optimizer),
				"embedding.precision="+c.precision, "embedding.rounding="+c.rounding, fmt.Sprintf("embedding.quantize_init=%v", c.quantizeInit))
			packed, err := runGraph(t, c.graph, engine.HazardsOff, sets...)
			if err != nil {
				t.Fatalf("packed: %v", err)
			}
			emulated, err := runGraph(t, c.graph, engine.HazardsOff, append(sets, "embedding.storage=emulated")...)
			if err != nil {
				t.Fatalf("emulated: %v", err)
			}
			if packed.Digest != emulated.Digest {
				t.Errorf("packed digest %s, emulated %s", packed.Digest, emulated.Digest)
			}
			fp32, err := runGraph(t, c.graph, engine.HazardsOff, workload("zipf", 3, 8, fmt.Sprint(worstCase), c.optimizer)...)
			if err != nil {
				t.Fatal(err)
			}
			// With quantize_init false, a row the cache holds from first
			// read to the end (no eviction, no bypass) is never
			// down-converted: a cache that holds every row the batches
			// touch ends with the FP32 digest (TestWholeCacheEndsWithFP32Digest).
			if c.quantizeInit && packed.Digest == fp32.Digest {
				t.Errorf("%s tables end with the FP32 digest: nothing was quantized", c.precision)
			}
			mc := packed.MemoryCompression
			if mc == nil || mc.Precision != c.precision || !(mc.Counted < 1) || !(mc.Eq3 < 1) {
				t.Errorf("memory_compression %+v, want a factor below 1 for %s", mc, c.precision)
			}
			if fp32.MemoryCompression != nil {
				t.Errorf("an FP32 run reports memory_compression %+v", fp32.MemoryCompression)
			}
		})
	}
}

// TestFP32PrecisionIsThePlainRun: precision fp32, and a low precision whose
// lowprec_min_rows exceeds every table, leave the digest unchanged.
func TestFP32PrecisionIsThePlainRun(t *testing.T) {
	t.Parallel()
	sets := workload("zipf", 4, 6, fmt.Sprint(worstCase), "sgd")
	want, err := runGraph(t, "no-cache", engine.HazardsOff, sets...)
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{
		{"embedding.precision=fp32", "embedding.rounding=stochastic"},
		{"embedding.precision=int2", "embedding.lowprec_min_rows=20001"},
	} {
		got, err := runGraph(t, "no-cache", engine.HazardsOff, append(sets, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != want.Digest {
			t.Errorf("%v: digest %s, want the plain run's %s", extra, got.Digest, want.Digest)
		}
	}
}

// TestInt4RunMemory: at dim 128, INT4 host tables measure at most 0.16 of
// FP32 in results.json's memory_compression (Eq. 3: 0.140625), and the
// host tables' allocation shrinks accordingly.
func TestInt4RunMemory(t *testing.T) {
	t.Parallel()
	sets := []string{"dataset.tables=2", "dataset.rows=4000", "dataset.dim=128", "dataset.batch_size=256",
		"dataset.lookups=8", "dataset.batches=4", "dataset.eval_batches=1", "dataset.locality=uniform"}
	res, err := runGraph(t, "no-cache", engine.HazardsOff, append(sets, "embedding.precision=int4")...)
	if err != nil {
		t.Fatal(err)
	}
	mc := res.MemoryCompression
	if mc == nil {
		t.Fatal("no memory_compression")
	}
	t.Logf("INT4 at dim 128: Eq. 2–3 %.5f, counted %.5f, measured %.5f", mc.Eq3, mc.Counted, mc.Measured)
	if mc.Eq3 != 0.140625 || mc.Counted != 0.140625 || mc.Measured > 0.16 {
		t.Errorf("memory_compression %+v, want Eq3 = counted = 0.140625 and measured ≤ 0.16", mc)
	}
}

// TestStochasticRoundingIsReproducible: the draws are keyed by (seed,
// table, row, batch, element), so a stochastic run ends with the same
// digest whatever the flow control lets run at once, and another seed
// gives another digest.
func TestStochasticRoundingIsReproducible(t *testing.T) {
	t.Parallel()
	sets := append(workload("zipf", 6, 8, fmt.Sprint(worstCase), "sgd"), "embedding.precision=int4", "embedding.rounding=stochastic")
	var digests []string
	for _, extra := range []string{"nats.credits=0", "nats.credits=6", "seed=7"} {
		res, err := runGraph(t, "no-cache", engine.HazardsOff, append(sets, extra)...)
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, res.Digest)
	}
	if digests[0] != digests[1] {
		t.Errorf("credits 0 and 6 end with %s and %s", digests[0], digests[1])
	}
	if digests[2] == digests[0] {
		t.Error("another seed ends with the same digest")
	}
}

// TestWholeCacheEndsWithFP32Digest: with every row of every table in the
// FP32 cache (a cache as large as the tables: nothing is ever evicted or
// bypassed), rows kept at their FP32 initial value until written
// (quantize_init: false) and the cache's rows kept in FP32 at the end, a
// low-precision run trains in FP32 throughout and ends with the FP32 run's
// digest. With quantize_init: true the initial rows are quantized and it
// does not.
func TestWholeCacheEndsWithFP32Digest(t *testing.T) {
	t.Parallel()
	sets := workload("zipf", 8, 8, "20000", "adagrad")
	want, err := runGraph(t, "no-cache", engine.HazardsOff, sets...)
	if err != nil {
		t.Fatal(err)
	}
	low := append(sets, "embedding.precision=int4", "embedding.rounding=stochastic")
	got, err := runGraph(t, "scratchpipe", engine.HazardsStrict, append(low, "embedding.quantize_init=false")...)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cache == nil || got.Cache.Evictions != 0 {
		t.Fatalf("the cache evicted: %+v", got.Cache)
	}
	if got.Digest != want.Digest {
		t.Errorf("whole cache, quantize_init false: digest %s, want FP32's %s", got.Digest, want.Digest)
	}
	q, err := runGraph(t, "scratchpipe", engine.HazardsStrict, low...)
	if err != nil {
		t.Fatal(err)
	}
	if q.Digest == want.Digest {
		t.Error("whole cache, quantize_init true: the quantized initial rows left no trace in the digest")
	}
}
