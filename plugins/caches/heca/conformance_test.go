package heca_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/heca"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func newHeca() cache.Cache { return heca.New() }

// The suite's sequential host (future window 2), the host of
// graphs/heca.yaml (past 0, future 1) and that of a pipelined six-stage
// graph (past 3, future 2), whose windows the suite checks the policy
// holds: no victim is a row of a batch in them. With and without a hot
// part, with either hash.
func TestConformance(t *testing.T) {
	t.Run("NoHotPart", func(t *testing.T) {
		cachetest.Run(t, newHeca, cachetest.WithOptions(json.RawMessage(`{"profile":"none"}`)))
	})
	t.Run("NoHotPartIdentity", func(t *testing.T) {
		cachetest.Run(t, newHeca, cachetest.WithWindows(0, 1), cachetest.WithOptions(json.RawMessage(`{"profile":"none","hash":"identity"}`)))
	})
	t.Run("Frequencies", func(t *testing.T) {
		cachetest.Run(t, newHeca, cachetest.WithOptions(frequencies(t, "")))
	})
	t.Run("Pipelined", func(t *testing.T) {
		cachetest.Run(t, newHeca, cachetest.WithWindows(3, 2), cachetest.WithOptions(json.RawMessage(`{"profile":"none","hash":"identity"}`)))
	})
	t.Run("PipelinedFrequencies", func(t *testing.T) {
		cachetest.Run(t, newHeca, cachetest.WithWindows(3, 2), cachetest.WithOptions(frequencies(t, "")))
	})
	t.Run("FrequenciesNextBatch", func(t *testing.T) {
		cachetest.Run(t, newHeca, cachetest.WithWindows(0, 1), cachetest.WithOptions(frequencies(t, `"hash_seed":3,`)))
	})
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/caches/heca/cmd/flowrun-cache-heca")
	cachetest.RunBinary(t, bin, cachetest.WithWindows(0, 1), cachetest.WithOptions(frequencies(t, "")))
	cachetest.RunBinary(t, bin, cachetest.WithOptions(json.RawMessage(`{"profile":"none","hash":"identity"}`)))
}

// frequencies lays out (table, row, count) triples favouring low rows of
// the suite's tables, as a host's warm-up profile, and returns the options
// that name it, with more (a JSON member and comma, or "") first.
func frequencies(t *testing.T, more string) json.RawMessage {
	t.Helper()
	var v []int64
	for table, rows := range []int64{1000, 40, 100000} {
		for row := range min(rows, 200) {
			v = append(v, int64(table), row, 1000/(row+1))
		}
	}
	ref, err := json.Marshal(cachetest.NewArena(t, 1<<16).Int64s(v))
	if err != nil {
		t.Fatal(err)
	}
	return json.RawMessage(fmt.Sprintf(`{%s"frequencies":%s}`, more, ref))
}
