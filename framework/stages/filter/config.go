package filter

import (
	"errors"
	"fmt"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/stage"
)

// The selection modes.
const (
	// Exact keeps the k best scores, best first (a bounded heap).
	Exact = "exact"
	// Bucket is RPAccel's top-k filtering unit (Sec. 6.2, Fig. 10b):
	// scores stream into equal-width CTR bins, those below a threshold
	// are dropped, and whole bins are taken from the top until at least
	// k candidates are out, unordered.
	Bucket = "bucket"
)

// The candidate sets a filter ranks.
const (
	// All ranks every candidate of the query (the frontend).
	All = "all"
	// Survivors ranks only the candidates an upstream filter kept (its topk
	// entries, kept of them), so a filter after a second model chooses
	// among the survivors that model scored.
	Survivors = "topk"
)

// What a bucket filter does when fewer than k candidates pass the
// threshold (RecPipe does not say; spec gap [A]).
const (
	// FallbackNone passes on what passed the threshold, fewer than k.
	FallbackNone = "none"
	// FallbackExact passes on the exact top k instead (a second pass
	// over every score, which the on-chip unit cannot do: it is charged
	// as an exact filter on top).
	FallbackExact = "exact"
)

// Config is the filter stage's options.
type Config struct {
	// K is how many candidates pass to the next stage: the k highest
	// scores of the batch's candidates (1 ≤ k ≤ dataset.batch_size).
	K int `mapstructure:"k"`
	// Device names the device that filters (RecPipe's frontends filter on
	// the host CPU; RPAccel has an on-chip top-k unit); reading the scores
	// and selecting the top k is charged to it. Empty charges nothing.
	Device string `mapstructure:"device"`
	// Mode is exact or bucket.
	Mode string `mapstructure:"mode"`
	// Bins is the bucket unit's CTR bins, equal width over [0, 1]
	// (RecPipe's text says N = 16; its Fig. 10b draws 10).
	Bins int `mapstructure:"bins"`
	// Threshold is the bucket unit's minimum CTR: a lower score is
	// dropped (0.5 in RecPipe). A score equal to it passes.
	Threshold float64 `mapstructure:"threshold"`
	// Fallback is what a bucket filter passes on when fewer than k
	// candidates reach the threshold: none or exact.
	Fallback string `mapstructure:"fallback"`
	// SubBatches splits the candidates into this many contiguous
	// sub-batches (RPAccel O.5) that each keep their share of k
	// (⌊k/n⌋, one more for the first k mod n), stitched in order.
	SubBatches int `mapstructure:"sub_batches"`
	// Candidates is all (every candidate of the query) or topk (the
	// survivors of an upstream filter).
	Candidates string `mapstructure:"candidates"`
	// NDCGK is the depth NDCG is measured at; 0 means k.
	NDCGK int `mapstructure:"ndcg_k"`
}

// Validate checks the options. That k fits the batch is checked when the
// stage is created, where the dataset's batch size is known.
func (c *Config) Validate() error {
	var errs []error
	if c.K < 1 {
		errs = append(errs, config.At("k", fmt.Errorf("must be ≥ 1, got %d", c.K)))
	}
	if c.Mode != Exact && c.Mode != Bucket {
		errs = append(errs, config.At("mode", fmt.Errorf("must be %s or %s, got %q", Exact, Bucket, c.Mode)))
	}
	if c.Bins < 1 {
		errs = append(errs, config.At("bins", fmt.Errorf("must be ≥ 1, got %d", c.Bins)))
	}
	if !(c.Threshold >= 0 && c.Threshold <= 1) {
		errs = append(errs, config.At("threshold", fmt.Errorf("must be in [0, 1], got %v", c.Threshold)))
	}
	if c.Fallback != FallbackNone && c.Fallback != FallbackExact {
		errs = append(errs, config.At("fallback", fmt.Errorf("must be %s or %s, got %q", FallbackNone, FallbackExact, c.Fallback)))
	}
	if c.SubBatches < 1 || (c.K >= 1 && c.SubBatches > c.K) {
		errs = append(errs, config.At("sub_batches", fmt.Errorf("must be from 1 to k (%d), got %d: each sub-batch keeps at least one", c.K, c.SubBatches)))
	}
	if c.Candidates != All && c.Candidates != Survivors {
		errs = append(errs, config.At("candidates", fmt.Errorf("must be %s or %s, got %q", All, Survivors, c.Candidates)))
	}
	if c.NDCGK < 0 {
		errs = append(errs, config.At("ndcg_k", fmt.Errorf("must be ≥ 0 (0: k), got %d", c.NDCGK)))
	}
	return errors.Join(errs...)
}

// DeviceNames lists the devices the stage uses, for the graph's checks.
func (c *Config) DeviceNames() []string {
	if c.Device == "" {
		return nil
	}
	return []string{c.Device}
}

// BatchFields is what the filter reads beyond the scores and labels: with
// candidates: topk, the upstream filter's survivors.
func (c *Config) BatchFields() stage.Fields {
	var f stage.Fields
	if c.Mode == Bucket {
		f.Produces = []batch.Field{Short}
	}
	if c.Candidates == Survivors {
		f.Consumes = []batch.Field{batch.TopK, batch.Kept}
	}
	return f
}

// depth is the NDCG depth.
func (c *Config) depth() int {
	if c.NDCGK > 0 {
		return c.NDCGK
	}
	return c.K
}
