package static_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/static"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
	"github.com/flowrun/flowrun/sdk/region"
)

func newStatic() cache.Cache { return static.New() }

// The static cache never evicts, so it holds any window; profiling the
// first batches needs a sequential host, so only the frequencies profile
// runs under a pipelined one.
func TestConformance(t *testing.T) {
	t.Run("Default", func(t *testing.T) { cachetest.Run(t, newStatic) })
	t.Run("ShortWarmup", func(t *testing.T) {
		cachetest.Run(t, newStatic, cachetest.WithOptions(json.RawMessage(`{"warmup_batches":2}`)))
	})
	t.Run("Frequencies", func(t *testing.T) {
		cachetest.Run(t, newStatic, cachetest.WithWindows(3, 2), cachetest.WithOptions(frequencies(t)))
	})
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/caches/static/cmd/flowrun-cache-static")
	cachetest.RunBinary(t, bin, cachetest.WithOptions(json.RawMessage(`{"warmup_batches":2}`)))
	cachetest.RunBinary(t, bin, cachetest.WithOptions(frequencies(t)))
}

// frequencies writes a region of (table, row, count) triples favouring low
// rows of the suite's tables, as a host passes a dataset's PDF, and returns
// the options that name it.
func frequencies(t *testing.T) json.RawMessage {
	t.Helper()
	var v []int64
	for table, rows := range []int64{1000, 40, 100000} {
		for row := range min(rows, 200) {
			v = append(v, int64(table), row, 1000/(row+1))
		}
	}
	r, err := region.Create("static-frequencies", int64(8*len(v)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	copy(region.Int64s(r.Bytes()), v)
	ref, err := json.Marshal(r.Ref())
	if err != nil {
		t.Fatal(err)
	}
	return json.RawMessage(fmt.Sprintf(`{"profile":"frequencies","frequencies":%s}`, ref))
}
