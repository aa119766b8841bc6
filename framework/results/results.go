// Package results is what a run leaves behind: results.json. Every figure
// is data — per-stage counts and latency percentiles on both clocks
// (measured wall time and modeled device time, the latter always labelled
// modeled), cache statistics, training metrics and the model digest.
package results

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/flowrun/flowrun/framework/atomicfile"
	"github.com/flowrun/flowrun/framework/clock"
)

// Results is the content of results.json.
type Results struct {
	Graph   string `json:"graph"`
	File    string `json:"file,omitempty"`
	RunID   string `json:"run_id"`
	Seed    uint64 `json:"seed"`
	Batches int    `json:"batches"`
	// EvalBatches are the held-out batches scored after training.
	EvalBatches int `json:"eval_batches"`
	// Dataset says how the run used its batch file; nil for generated
	// (synthetic) data, where no batch repeats.
	Dataset *DatasetUse    `json:"dataset,omitempty"`
	Config  map[string]any `json:"config,omitempty"`
	Stages  []Stage        `json:"stages"`
	// Digest is sha256 over every embedding row and every dense parameter
	// (with optimizer state) at the end of the run, in canonical order.
	Digest      string    `json:"digest"`
	IterationMs Iteration `json:"iteration_ms"`
	// ModeledClock is the modeled schedule of the run's dependency graph:
	// makespan, iteration times, bottleneck, busy time per stage and per
	// device or link. Every figure in it is modeled.
	ModeledClock *clock.Summary `json:"modeled_clock,omitempty"`
	Throughput   Throughput     `json:"throughput"`
	Cache        *Cache         `json:"cache,omitempty"`
	// Shadows are the shadow policies' what-ifs on the run's plan
	// requests, in the order the graph names them.
	Shadows []Shadow `json:"shadows,omitempty"`
	Metrics Metrics  `json:"metrics"`
	// Serving is per-query latency under a Poisson load, modeled and
	// measured (serving.go); nil when the graph serves no load.
	Serving *Serving `json:"serving,omitempty"`
	// HostRSSPeakBytes is the flowrun process's peak resident set
	// (getrusage: maxrss), measured; Memory breaks the run's memory down.
	HostRSSPeakBytes int64    `json:"host_rss_peak_bytes,omitempty"`
	Memory           []Memory `json:"memory,omitempty"`
	// MemoryCompression is the host tables' memory compression factor
	// when some are stored below FP32 (embedding.precision); absent for
	// FP32 tables.
	MemoryCompression *MemoryCompression `json:"memory_compression,omitempty"`
	Plugins           []PluginUse        `json:"plugins,omitempty"`
	// Primitives break the stages that report them (train) down by
	// embedding primitive, for Tensor Casting's Fig. 12 and Fig. 15.
	Primitives []Primitives `json:"primitives,omitempty"`
	// Placement is where placed stages ran and what crossed each edge
	// between processes; nil when every stage ran in the run's process.
	Placement *Placement `json:"placement,omitempty"`
	WallMs    float64    `json:"wall_ms"`
	Started   time.Time  `json:"started"`
}

// DatasetUse is how a run read a batch file (dataset.kind: file). A run
// that asks for more training batches than the file holds goes around it
// again: Epochs above 1 says the data was repeated.
type DatasetUse struct {
	Path string `json:"path"`
	// FileBatches is the training batches the file holds at the run's
	// batch size, after its held-out batches.
	FileBatches int `json:"file_training_batches"`
	// Epochs is the run's training batches over FileBatches: the passes
	// over the file's training part.
	Epochs float64 `json:"epochs"`
}

// Primitives is one stage's time per primitive, summed over the run's
// batches (training and held-out): gather (forward gather-reduce),
// backward (gradient coalescing: expand-coalesce or the casted
// gather-reduce; absent where it is fused into scatter), scatter (the
// optimizer update), mlp (the dense model), transfer (modeled only: pooled
// embeddings and gradients over the link).
type Primitives struct {
	Stage   string `json:"stage"`
	Batches int    `json:"batches"`
	// WallMs is measured: the time the kernel and model calls took.
	WallMs map[string]float64 `json:"wall_ms"`
	// ModeledMs is modeled device time.
	ModeledMs map[string]float64 `json:"modeled_ms"`
	// DeviceBusyMs is the modeled time the stage charged to each device;
	// DeviceUtilisation divides it by the modeled clock's makespan, the
	// fraction of modeled training time the device is active (Tensor
	// Casting Fig. 15 for an nmp-dimm device). Both modeled.
	DeviceBusyMs      map[string]float64 `json:"modeled_device_busy_ms,omitempty"`
	DeviceUtilisation map[string]float64 `json:"modeled_device_utilisation,omitempty"`
}

// Stage is one stage's figures.
type Stage struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Batches int    `json:"batches"`
	// WallMs are percentiles of the measured time the stage spent per batch.
	WallMs Percentiles `json:"wall_ms"`
	// ModeledMs are percentiles of the modeled device time per batch (only
	// for stages that charge a device).
	ModeledMs *Percentiles `json:"modeled_ms,omitempty"`
}

// Percentiles of a distribution, in milliseconds.
type Percentiles struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// Iteration is time per batch.
type Iteration struct {
	// Wall is measured: the run's wall time over all its batches, training
	// and held-out.
	Wall float64 `json:"wall"`
	// SteadyWall is measured too, without the start-up and the end: the
	// wall time between the first and the last batch leaving the graph,
	// over the batches between.
	SteadyWall float64 `json:"steady_wall,omitempty"`
	// Modeled is the steady-state time between batches leaving the graph on
	// the modeled clock's schedule of the run (pipelined or sequential).
	Modeled float64 `json:"modeled,omitempty"`
}

// Throughput is samples per second.
type Throughput struct {
	WallSamplesPerS    float64 `json:"wall_samples_per_s"`
	ModeledSamplesPerS float64 `json:"modeled_samples_per_s,omitempty"`
}

// Cache is the run's cache statistics over training batches.
type Cache struct {
	Plugin    string           `json:"plugin"`
	Rows      int64            `json:"rows_per_table"`
	Hits      int64            `json:"hits"`
	Misses    int64            `json:"misses"`
	Evictions int64            `json:"evictions"`
	HitRate   float64          `json:"hit_rate"`
	LinkBytes map[string]int64 `json:"bytes_per_link,omitempty"`
	// ProfileRows are the distinct rows per table the warm-up profile saw,
	// for a policy that asked for one (a static top-N cache): such a
	// policy never holds more rows than its profile has, so a cache
	// larger than them holds no more, and hits no more, than one of
	// their size.
	ProfileRows []int64 `json:"profile_rows_per_table,omitempty"`
	// DistinctHits and DistinctMisses count each batch's distinct rows
	// once per table (cache.TableStats), the mixed-precision cache paper's
	// unit; DistinctHitRate is their hit rate.
	DistinctHits    int64   `json:"distinct_hits,omitempty"`
	DistinctMisses  int64   `json:"distinct_misses,omitempty"`
	DistinctHitRate float64 `json:"distinct_hit_rate,omitempty"`
	// HotLookups are the lookups of rows in the policy's static part,
	// never evicted (HECA's hot part); HotShare is their share of all
	// lookups. Absent for a policy without one.
	HotLookups int64   `json:"hot_lookups,omitempty"`
	HotShare   float64 `json:"hot_share,omitempty"`
}

// ProfileLimit reports the most distinct rows the warm-up profile saw in
// any table, and whether that is fewer than the cache's rows per table:
// the cache then held only what its profile saw, and a larger one would
// hold, and hit, no more (the data, not a policy's bug).
func (c *Cache) ProfileLimit() (rows int64, limited bool) {
	if c == nil || len(c.ProfileRows) == 0 {
		return 0, false
	}
	rows = slices.Max(c.ProfileRows)
	return rows, rows < c.Rows
}

// Point is one value of a series at a batch.
type Point struct {
	Batch uint64  `json:"batch"`
	Value float64 `json:"value"`
}

// Metrics are the training (or inference) metrics.
type Metrics struct {
	Loss    *LossCurve `json:"loss,omitempty"`
	AUC     *float64   `json:"auc,omitempty"`
	LogLoss *float64   `json:"logloss,omitempty"`
	NE      *float64   `json:"ne,omitempty"`
	// Accuracy is the held-out share of samples whose prediction,
	// thresholded at 0.5, equals the label.
	Accuracy *float64 `json:"accuracy,omitempty"`
	// NDCG is the mean NDCG@k of an inference graph's filter stage.
	NDCG      *float64           `json:"ndcg,omitempty"`
	Extra     map[string]float64 `json:"extra,omitempty"`
	EvalCount int                `json:"eval_samples,omitempty"`
}

// LossCurve is the training loss: first, last and every Every batches.
type LossCurve struct {
	First float64 `json:"first"`
	Last  float64 `json:"last"`
	// FirstTenthMean and LastTenthMean average the first and last tenth of
	// the batches: less noisy than single batches for "did it learn".
	FirstTenthMean float64 `json:"first_tenth_mean"`
	LastTenthMean  float64 `json:"last_tenth_mean"`
	Every          int     `json:"every"`
	Points         []Point `json:"points"`
}

// Memory is the peak bytes one holder kept on a device.
type Memory struct {
	Device string `json:"device"`
	// What names the holder: a process, the host tables, Storage, the
	// batch pool.
	What      string `json:"what,omitempty"`
	PeakBytes int64  `json:"peak_bytes"`
	// VirtualBytes is the size of the holder's regions: they are sparse,
	// and only PeakBytes of them cost memory.
	VirtualBytes int64 `json:"virtual_bytes,omitempty"`
	// Source says where PeakBytes comes from: MemoryMeasured or
	// MemoryCounted.
	Source string `json:"source,omitempty"`
}

// MemoryCompression is the mixed-precision paper's memory compression
// factor of the host tables (Eq. 2 with Eq. 3): their embedding values'
// bytes over the same values in FP32, without the cache (Eq3) and with it
// (Eq2). Optimizer state is left out, as the paper's factor leaves it out.
type MemoryCompression struct {
	// Precision and Storage echo embedding.precision and .storage.
	Precision string `json:"precision"`
	Storage   string `json:"storage"`
	// Eq3 is Eq. 2–3 over every row of every table (sdk/kernel/quant
	// TablesFactor); tables under lowprec_min_rows count as FP32.
	Eq3 float64 `json:"eq3"`
	// Eq2 is Eq. 2 with the cache's terms: Eq3's numerator plus the
	// cache's memory as its policy declares it (sdk/cache
	// Needs.Memory: M_C, M_tags, M_cnt), over the same FP32 bytes. Absent
	// when the policy declares none.
	Eq2 float64 `json:"eq2,omitempty"`
	// CacheBytes is that cache memory, in bytes (with Eq2).
	CacheBytes int64 `json:"cache_bytes,omitempty"`
	// Counted is the touched rows' value bytes over their FP32 bytes.
	Counted float64 `json:"counted"`
	// Measured is the value regions' allocated blocks over the touched
	// rows' FP32 value bytes (page granularity included).
	Measured float64 `json:"measured"`
}

// The values of Memory.Source.
const (
	// MemoryMeasured figures come from the operating system (getrusage,
	// /proc, a file's allocated blocks).
	MemoryMeasured = "measured"
	// MemoryCounted figures are bytes flowrun counted itself (e.g. touched
	// rows × row bytes), without the operating system's page granularity.
	MemoryCounted = "counted"
)

// PluginUse records which plugin served each role, and how.
type PluginUse struct {
	Kind   string `json:"kind"`
	Role   string `json:"role"`
	Ref    string `json:"ref"`
	Name   string `json:"name"`
	Remote bool   `json:"out_of_process"`
	// Profile is the hardware a device plugin models (its profile's name,
	// e.g. "NVIDIA V100 32 GB HBM2, PCIe gen3 x16"); devices only.
	Profile string `json:"profile,omitempty"`
	// Servers is how many queries the device serves at once by its
	// profile (device.Profile.Servers; 0: one); devices only. Serving
	// replays take it unless the graph's serving.servers says otherwise.
	Servers int32 `json:"servers,omitempty"`
}

// PercentilesOf summarises durations given in nanoseconds.
func PercentilesOf(ns []int64) Percentiles {
	if len(ns) == 0 {
		return Percentiles{}
	}
	s := append([]int64(nil), ns...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	q := func(p float64) float64 {
		// nearest-rank percentile
		i := int(math.Ceil(p*float64(len(s)))) - 1
		if i < 0 {
			i = 0
		}
		return float64(s[i]) / 1e6
	}
	return Percentiles{P50: q(0.50), P95: q(0.95), P99: q(0.99), Mean: sum / float64(len(s)) / 1e6, Max: float64(s[len(s)-1]) / 1e6}
}

// NewLossCurve summarises a loss series, keeping every every-th point.
func NewLossCurve(points []Point, every int) *LossCurve {
	if len(points) == 0 {
		return nil
	}
	if every < 1 {
		every = 1
	}
	c := &LossCurve{First: points[0].Value, Last: points[len(points)-1].Value, Every: every}
	tenth := max(1, len(points)/10)
	for i := 0; i < tenth; i++ {
		c.FirstTenthMean += points[i].Value / float64(tenth)
		c.LastTenthMean += points[len(points)-1-i].Value / float64(tenth)
	}
	for i, p := range points {
		if i%every == 0 || i == len(points)-1 {
			c.Points = append(c.Points, p)
		}
	}
	return c
}

// Write writes r as indented JSON to path atomically: a reader never sees a
// half-written file, and a failed run never leaves one behind.
func (r *Results) Write(path string) error {
	if err := WriteJSON(path, r); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// WriteJSON writes v as indented JSON to path atomically: into a temporary
// file beside it, renamed over path once complete, so a reader never sees
// half a file and a failure leaves no file behind. The file is 0644.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o644)
}

// Read loads a results file.
func Read(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
