package insert_test

import (
	"testing"

	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/stages/internal/stagetest"
)

// A victim missed again within its own batch is re-staged from the copy
// collect read out of Storage (the trained one), not from its stale host
// row: the straw-man graph under builtin:one-pass-fifo (one pass in
// request order, FIFO among the slots the batch has not used), with a
// cache smaller than a batch's rows, evicts rows that later lookups of
// the same batch miss again, and still ends with no-cache's digest. The
// shipped policies never make this case: they hold every row a batch hits
// before a miss picks a victim.
func TestAVictimMissedAgainInItsBatchKeepsTheDigest(t *testing.T) {
	t.Parallel()
	bare := withoutCacheOptions(t, "strawman")
	for _, c := range []struct {
		locality, optimizer string
	}{
		{"high", "sgd"},
		{"zipf", "adagrad"},
	} {
		t.Run(c.locality+"/"+c.optimizer, func(t *testing.T) {
			t.Parallel()
			sets := append([]string{"dataset.locality=" + c.locality, "dataset.batches=6", "embedding.optimizer=" + c.optimizer}, small...)
			if c.optimizer != "sgd" {
				sets = append(sets, "stages.train.learning_rate=0.05") // as in TestFourGraphsEndWithTheSameDigest
			}
			want, err := runGraph(t, "no-cache", engine.HazardsOff, sets...)
			if err != nil {
				t.Fatal(err)
			}
			// 100 slots per table against 256 lookups per table per batch.
			res, err := stagetest.RunGraph(t, kinds(t), bare, engine.HazardsOff,
				append([]string{"cache.plugin=builtin:" + stagetest.OnePassFIFO, "cache.size=100"}, sets...)...)
			if err != nil {
				t.Fatal(err)
			}
			again := stagetest.ReplacedVictims(res.RunID)
			if again == 0 || res.Cache == nil || res.Cache.Hits == 0 {
				t.Fatalf("no victim was missed again in its own batch (%d), cache stats %+v: the workload does not make the case", again, res.Cache)
			}
			if res.Digest != want.Digest {
				t.Errorf("digest %s, want no-cache's %s (%d victims missed again in their own batch)", res.Digest, want.Digest, again)
			}
			t.Logf("%d victims missed again in their own batch; cache %+v", again, *res.Cache)
		})
	}
}
