package insert_test

import (
	"fmt"
	"testing"

	"github.com/flowrun/flowrun/framework/engine"
)

// graphs/heca-criteo.yaml (builtin:heca on the criteo-kaggle profile: 26
// tables of Kaggle's sizes, most smaller than the cache, five of millions
// of rows) ends with graphs/criteo-no-cache.yaml's digest: over seeds,
// cache sizes that fill and replace, a run without a hot part, and an
// optimizer with state. Shrunk to a few batches of 128 samples.
func TestHecaCriteoEndsWithCriteoNoCacheDigest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		seed      int
		cacheSize string
		optimizer string
		extra     []string
	}{
		{1, "64", "sgd", nil},
		{2, "256", "adagrad", []string{"cache.options.profile=none"}},
		{3, "32", "rowwise_adagrad", []string{"cache.options.hash=identity", "cache.options.warmup_batches=2"}},
	} {
		name := fmt.Sprintf("seed=%d/cache=%s/%s", c.seed, c.cacheSize, c.optimizer)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sets := []string{
				fmt.Sprintf("seed=%d", c.seed), "dataset.batches=6", "dataset.batch_size=128",
				"dataset.eval_batches=1", "dataset.dim=8", "embedding.optimizer=" + c.optimizer,
			}
			if c.optimizer != "sgd" {
				sets = append(sets, "stages.train.learning_rate=0.05")
			}
			want, err := runGraph(t, "criteo-no-cache", engine.HazardsOff, sets...)
			if err != nil {
				t.Fatalf("criteo-no-cache: %v", err)
			}
			got, err := runGraph(t, "heca-criteo", engine.HazardsStrict,
				append(append(sets, "cache.size="+c.cacheSize), c.extra...)...)
			if err != nil {
				t.Fatalf("heca-criteo: %v", err)
			}
			if got.Digest != want.Digest {
				t.Errorf("heca-criteo: digest %s, want criteo-no-cache's %s", got.Digest, want.Digest)
			}
			st := got.Cache
			if st == nil || st.Hits == 0 || st.Misses == 0 || st.Evictions == 0 {
				t.Errorf("cache stats %+v: the table must hit, miss and replace", st)
			}
			if r := got.Metrics.Extra["dsf_ratio"]; r <= 0 || r >= 1 {
				t.Errorf("dsf_ratio %v, want in (0, 1) on skewed data", r)
			}
		})
	}
}
