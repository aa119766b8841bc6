package load

import (
	"errors"
	"fmt"
	"math"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/serving"
	"github.com/flowrun/flowrun/framework/stage"
)

// Config is the load stage's options. The dataset itself (shape, locality,
// number of batches) is the graph's dataset section.
type Config struct {
	// Eval says whether to append the dataset's held-out batches after the
	// training batches, for evaluation by the train stage.
	Eval bool `mapstructure:"eval"`
	// Arrival is how batches are released: none (as fast as the graph
	// takes them, the default) or poisson (each batch is a query that
	// arrives at the next time of a Poisson stream at QPS, for measured
	// serving latency; docs/serving.md).
	Arrival string `mapstructure:"arrival"`
	// QPS is the wall-clock arrival rate with arrival: poisson, queries
	// (batches) per second.
	QPS float64 `mapstructure:"qps"`
	// Warmup is how many of the first queries (batches) arrive like the
	// others but are not counted, with arrival: poisson: a cold run's
	// first batches pay for first touches (rows initialised, pages
	// faulted), which is not the steady state a serving latency
	// describes.
	Warmup int `mapstructure:"warmup"`
	// SLAMs is the wall-clock latency target, in ms, with arrival:
	// poisson: the measured report gives the share of queries within it.
	// 0: none. (serving.sla_ms is the modeled clock's.)
	SLAMs float64 `mapstructure:"sla_ms"`
}

// The values of arrival.
const (
	ArrivalNone    = "none"
	ArrivalPoisson = serving.Poisson
)

// Validate checks the arrival process and its rate.
func (c *Config) Validate() error {
	var errs []error
	switch c.Arrival {
	case ArrivalNone:
		for _, k := range []struct {
			key string
			set bool
		}{{"qps", c.QPS != 0}, {"warmup", c.Warmup != 0}, {"sla_ms", c.SLAMs != 0}} {
			if k.set {
				errs = append(errs, config.At(k.key, fmt.Errorf("is read only with arrival: %s; with arrival: %s batches go as fast as the graph takes them (remove %s, or set arrival: %s)", ArrivalPoisson, ArrivalNone, k.key, ArrivalPoisson)))
			}
		}
	case ArrivalPoisson:
		if !(c.QPS > 0) || math.IsInf(c.QPS, 0) {
			errs = append(errs, config.At("qps", fmt.Errorf("must be a finite number of queries per second > 0 with arrival: %s, got %g", ArrivalPoisson, c.QPS)))
		}
		if c.Warmup < 0 {
			errs = append(errs, config.At("warmup", fmt.Errorf("must be ≥ 0 batches, got %d", c.Warmup)))
		}
		if !(c.SLAMs >= 0) || math.IsInf(c.SLAMs, 0) {
			errs = append(errs, config.At("sla_ms", fmt.Errorf("must be a finite number of ms ≥ 0 (0: no SLA), got %g", c.SLAMs)))
		}
	default:
		errs = append(errs, config.At("arrival", fmt.Errorf("unknown arrival %q (allowed: %s, %s)", c.Arrival, ArrivalNone, ArrivalPoisson)))
	}
	return errors.Join(errs...)
}

// Arrival is the batch stat a paced load stage records: the query's
// scheduled arrival in Unix nanoseconds (serving.ArrivalStat), which the
// runtime reads when the batch leaves the graph.
var Arrival = batch.NewStat(serving.ArrivalStat)

// BatchFields adds the arrival stat when batches are paced.
func (c *Config) BatchFields() stage.Fields {
	if c.Arrival != ArrivalPoisson {
		return stage.Fields{}
	}
	return stage.Fields{Produces: []batch.Field{Arrival}}
}
