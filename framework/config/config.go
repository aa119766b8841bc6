// Package config is the typed form of a graph file: the dataset, the model,
// the devices, the cache, the stages and how to trace and connect them.
//
// A graph file is decoded over Default() with unknown keys rejected; then
// Validate walks the whole tree and joins every error, each prefixed by its
// key path and, when the key is in the file, by file:line.
//
// Errors are *Error values (`FILE:LINE: PATH: message`), joined so that a
// user sees every problem at once. At and (*Source).Annotate let other
// packages (the graph builder, stage factories) report theirs the same way.
//
// config knows nothing of stage kinds' own options (they stay a raw map
// here, decoded by each stage's factory) nor of plugins beyond their
// reference strings. It must not import other framework packages.
package config

import "slices"

// Config is a whole graph.
type Config struct {
	// Name names the graph in results and traces; defaults to the file name.
	Name string `mapstructure:"name"`
	// Seed makes a run deterministic: data, initial weights and every
	// random choice of every plugin derive from it.
	Seed uint64 `mapstructure:"seed"`
	// Pipeline says whether batches overlap in the graph (pipelined, the
	// default) or go through it one at a time (sequential: the straw-man
	// of ScratchPipe, and the reference every pipelined design must match).
	Pipeline Pipeline `mapstructure:"pipeline"`
	// Dataset is where batches come from.
	Dataset Dataset `mapstructure:"dataset"`
	// Model is the dense model plugin.
	Model PluginRef `mapstructure:"model"`
	// Models are further dense models, by name, that stages rank with
	// beside Model (RecPipe's frontends: a light model filtering for a
	// heavy one), each with host tables of its own at its own dim.
	Models map[string]NamedModel `mapstructure:"models"`
	// Kernel is the embedding-kernel plugin.
	Kernel PluginRef `mapstructure:"kernel"`
	// Embedding is how embedding rows are trained: the sparse optimizer,
	// whose state is stored in each row after its values.
	Embedding Embedding `mapstructure:"embedding"`
	// Devices are the named devices (memory tiers with cost models) that
	// stages refer to, e.g. host and gpu.
	Devices map[string]PluginRef `mapstructure:"devices"`
	// Cache is the cache policy and its size.
	Cache Cache `mapstructure:"cache"`
	// Stages are the graph's nodes by name.
	Stages map[string]Stage `mapstructure:"stages"`
	// Tracing says where spans go.
	Tracing Tracing `mapstructure:"tracing"`
	// NATS says which server joins the stages.
	NATS NATS `mapstructure:"nats"`
	// Shards, when set, partitions the host tables over table-shard
	// processes (shards.go).
	Shards *Shards `mapstructure:"shards"`
	// Serving, when set, replays queries under a Poisson load on the
	// modeled clock (serving.go, docs/serving.md).
	Serving *Serving `mapstructure:"serving"`
	// Placement, when set, runs named stages in flowrun worker processes
	// (placement.go, docs/scale-out.md).
	Placement *Placement `mapstructure:"placement"`
	// Echo is the graph as Load read it: the file's keys (lower-cased) with
	// the --set overrides applied, before defaults; results.json echoes it
	// as `config` (DESIGN.md §8). Nil for a Config not made by Load.
	Echo map[string]any `mapstructure:"-"`
}

// Dataset describes the batches a run trains or serves on.
type Dataset struct {
	// Kind is the source: synthetic, or file (a batch file written by
	// flowrun gen or flowrun convert).
	Kind string `mapstructure:"kind"`
	// Path is the batch file read when Kind is file; a relative path is
	// relative to the graph file's directory when written in the file, to
	// the working directory when given with --set. Its shape must match tables, lookups,
	// dense_features and rows; its last eval_batches·batch_size samples
	// are the held-out batches.
	Path string `mapstructure:"path"`
	// Batches is how many training batches the run processes.
	Batches int `mapstructure:"batches"`
	// BatchSize is samples per batch.
	BatchSize int `mapstructure:"batch_size"`
	// Tables is the number of embedding tables.
	Tables int `mapstructure:"tables"`
	// Rows is the number of rows per table, unless TableRows gives each
	// table its own.
	Rows int64 `mapstructure:"rows"`
	// TableRows, when set, is the rows of each table (one entry per
	// table) and replaces Rows: Criteo's 26 fields run from 4 to 10
	// million rows. Empty: every table has Rows rows, or, with locality
	// criteo-kaggle, Kaggle's cardinalities (CriteoKaggleRows).
	TableRows []int64 `mapstructure:"table_rows"`
	// Dim is the embedding dimension.
	Dim int `mapstructure:"dim"`
	// Lookups is the number of IDs per sample per table (the bag size).
	Lookups int `mapstructure:"lookups"`
	// Locality is the access distribution of synthetic IDs: random, low,
	// medium, high, zipf, uniform or criteo-kaggle (framework/data/README.md).
	Locality string `mapstructure:"locality"`
	// ZipfS is the Zipf exponent when Locality is zipf.
	ZipfS float64 `mapstructure:"zipf_s"`
	// CriteoSkew is how the criteo-kaggle locality reads HECA's Fig. 1
	// statistic (4.43% of features carry 90% of accesses): pooled over
	// every table's features, one exponent for all (the default), or
	// per-table, each table its own exponent for which its own hottest
	// 4.43% carry 90% of its lookups (framework/data/README.md).
	CriteoSkew string `mapstructure:"criteo_skew"`
	// DenseFeatures is the number of continuous features per sample.
	DenseFeatures int `mapstructure:"dense_features"`
	// EvalBatches is the number of held-out batches scored after training.
	EvalBatches int `mapstructure:"eval_batches"`
	// LabelOffset is added to the synthetic teacher's logit: negative
	// values make positives rarer (Criteo Kaggle's are about a quarter).
	// 0 (the default) leaves the labels as they were.
	LabelOffset float64 `mapstructure:"label_offset"`
	// LabelNoise is the standard deviation of a per-sample term added to
	// the teacher's logit that no feature carries, so that no model can
	// learn the labels exactly. 0 (the default): none.
	LabelNoise float64 `mapstructure:"label_noise"`
}

// Embedding configures the training of embedding rows. The runtime needs
// it before anything runs: the optimizer's state floats widen every row
// (host tables, Storage, the staged rows of the cache traffic).
type Embedding struct {
	// Optimizer is the sparse optimizer the train stage's kernel applies:
	// sgd (no state), adagrad (dim state floats per row) or
	// rowwise_adagrad (one state float per row).
	Optimizer string `mapstructure:"optimizer"`
	// Epsilon is added to the square root of Adagrad's accumulator
	// (ignored by sgd).
	Epsilon float64 `mapstructure:"epsilon"`
	// Precision is how host tables store embedding values: fp32 (the
	// default, unchanged), fp16, or row-wise quantized int8, int4, int2
	// with an FP32 scale and bias per row (mixed-precision embeddings,
	// Sec. 3). Optimizer state stays FP32.
	Precision string `mapstructure:"precision"`
	// Rounding is how a row is down-converted when stored: nearest (ties
	// to even) or stochastic (counter-based draws, reproducible).
	Rounding string `mapstructure:"rounding"`
	// LowprecMinRows: tables with fewer rows stay FP32 (the paper trains
	// tables of at most 1K rows in FP32, Sec. 4.3).
	LowprecMinRows int64 `mapstructure:"lowprec_min_rows"`
	// Storage is packed (rows at their bit width plus scale and bias) or
	// emulated (FP32 rows holding the quantize-dequantized values, the
	// paper's CPU emulation, Sec. 4.1); both give the same bits.
	Storage string `mapstructure:"storage"`
	// QuantizeInit stores a row's initial FP32 value at its precision
	// when the row is first touched (true, the default); false keeps a
	// row at its FP32 initial value until its first write, as the
	// paper's emulation does.
	QuantizeInit bool `mapstructure:"quantize_init"`
	// TablesDir puts the host tables in files under this directory (on
	// disk: the disk tier, for tables whose touched rows exceed memory),
	// with the OS page cache as the DRAM above them; empty keeps them in
	// shared memory (/dev/shm). Results do not depend on it.
	TablesDir string `mapstructure:"tables_dir"`
}

// PluginRef names a plugin and its options. Plugin is `builtin:NAME` for a
// plugin linked into flowrun, or a path to a plugin binary.
type PluginRef struct {
	// Plugin is the reference: builtin:NAME or a path to a binary.
	Plugin string `mapstructure:"plugin"`
	// SHA256 pins the binary Plugin names: its SHA-256 sum in hex, which
	// the binary must have to run (flowrun plugins lock writes it). Empty
	// leaves it unpinned; a builtin takes none.
	SHA256 string `mapstructure:"sha256"`
	// Options are the plugin's own settings, passed to it as they are; the
	// plugin validates them when configured.
	Options map[string]any `mapstructure:"options"`
}

// NamedModel is one of the graph's further models (models: NAME): a dense
// model plugin with host embedding tables of its own, the dataset's tables
// and rows at the model's own dim (RMsmall's 4 and RMlarge's 32 cannot
// share one set of tables).
type NamedModel struct {
	// Plugin is the model plugin: builtin:NAME or a path to a binary.
	Plugin string `mapstructure:"plugin"`
	// Options are the plugin's own settings (a dlrm preset, say).
	Options map[string]any `mapstructure:"options"`
	// Dim is the embedding dim of the model's tables.
	Dim int `mapstructure:"dim"`
	// Checkpoint, when set, is a model checkpoint (flowrun run
	// --save-model) the model and its tables are loaded from: a trained
	// model to serve.
	Checkpoint string `mapstructure:"checkpoint" json:",omitempty"`
}

// Cache is the cache policy plugin and how much of each table it holds.
type Cache struct {
	// Plugin is the cache policy plugin: builtin:NAME or a path to a binary.
	Plugin string `mapstructure:"plugin"`
	// SHA256 pins the binary Plugin names, as PluginRef.SHA256.
	SHA256 string `mapstructure:"sha256"`
	// Size is a fraction of each table's rows (0 < size < 1, e.g. 0.05) or
	// a row count (an integer ≥ 1).
	Size float64 `mapstructure:"size"`
	// Options are the policy's own settings (e.g. ways for a
	// set-associative cache), passed to the plugin as they are.
	Options map[string]any `mapstructure:"options"`
}

// Stage is one node of the graph.
type Stage struct {
	// Kind is the stage kind: load, plan, collect, exchange, insert, train,
	// cast, filter or score.
	Kind string `mapstructure:"kind"`
	// In is the subject the stage consumes (empty for a source).
	In string `mapstructure:"in"`
	// Out are the subjects the stage publishes every batch to (empty for a
	// sink).
	Out []string `mapstructure:"out"`
	// Feedback lists those of Out that close a declared cycle.
	Feedback []string `mapstructure:"feedback"`
	// Options are the kind's own keys, decoded and validated by its factory.
	Options map[string]any `mapstructure:",remain"`
}

// Tracing configures the OpenTelemetry exporter.
type Tracing struct {
	// Exporter is none, stdout, file:PATH, otlp-grpc://host:port or
	// otlp-http://host:port.
	Exporter string `mapstructure:"exporter"`
}

// NATS configures the bus.
type NATS struct {
	// URL of an external server; empty runs an embedded one in process.
	URL string `mapstructure:"url"`
	// Credits is how many batches a stage may hold queued on its input,
	// besides the one it works on. 0 hands each batch straight from one
	// stage to the next (lockstep: a stage finishing a batch waits until
	// the next stage takes it), the pipeline ScratchPipe's windows assume.
	Credits int `mapstructure:"credits"`
}

// Default is the config every graph file is decoded over. It has no stages:
// a graph must define them.
func Default() *Config {
	return &Config{
		Seed:     1,
		Pipeline: Pipelined,
		Dataset: Dataset{
			Kind:          "synthetic",
			Batches:       20,
			BatchSize:     256,
			Tables:        4,
			Rows:          100000,
			Dim:           16,
			Lookups:       8,
			Locality:      "zipf",
			ZipfS:         1.05,
			CriteoSkew:    CriteoSkewPooled,
			DenseFeatures: 13,
			EvalBatches:   4,
		},
		Model:  PluginRef{Plugin: "builtin:logreg"},
		Kernel: PluginRef{Plugin: "builtin:cpu"},
		Embedding: Embedding{Optimizer: "sgd", Epsilon: 1e-8, Precision: "fp32", Rounding: "nearest",
			LowprecMinRows: 1000, Storage: "packed", QuantizeInit: true},
		Devices: map[string]PluginRef{
			"host": {Plugin: "builtin:cpu-dram"},
			"gpu":  {Plugin: "builtin:hbm"},
		},
		Cache:   Cache{Plugin: "builtin:lru", Size: 0.05},
		Tracing: Tracing{Exporter: "none"},
		NATS:    NATS{URL: "", Credits: 2},
	}
}

// CriteoKaggle is the locality that shapes synthetic data like Criteo
// Kaggle (framework/data/README.md): 26 tables of one lookup, each of its
// field's cardinality.
const CriteoKaggle = "criteo-kaggle"

// The readings of HECA's Fig. 1 the criteo-kaggle locality offers
// (Dataset.CriteoSkew).
const (
	CriteoSkewPooled   = "pooled"
	CriteoSkewPerTable = "per-table"
)

// CriteoKaggleRows are the cardinalities of Criteo Kaggle's 26 categorical
// fields C1–C26, as the mixed-precision paper's Table 1 lists them (the
// counts the DLRM reference prints for the 7-day set; 33,762,591 rows).
var CriteoKaggleRows = []int64{
	4, 18, 306, 2173, 12518, 286181, 8351593, 4, 24, 584, 3195, 14993, 2202608,
	10131227, 11, 28, 634, 5653, 93146, 5461306, 16, 105, 1461, 5684, 142572, 7046547,
}

// listedRows is the per-table row counts the dataset gives: TableRows,
// or Kaggle's cardinalities with locality criteo-kaggle and no
// TableRows; nil when every table has Rows rows.
func (d Dataset) listedRows() []int64 {
	switch {
	case len(d.TableRows) > 0:
		return d.TableRows
	case d.Locality == CriteoKaggle:
		return CriteoKaggleRows
	}
	return nil
}

// RowsOf is the rows of table t: TableRows[t] when given, Kaggle's
// cardinality with locality criteo-kaggle and no TableRows, else Rows (as
// for a table past the list's end, which Validate refuses).
func (d Dataset) RowsOf(t int) int64 {
	if l := d.listedRows(); t >= 0 && t < len(l) {
		return l[t]
	}
	return d.Rows
}

// AllRows is RowsOf of every table.
func (d Dataset) AllRows() []int64 {
	rows := make([]int64, max(d.Tables, 0))
	for t := range rows {
		rows[t] = d.RowsOf(t)
	}
	return rows
}

// MaxRows is the rows of the largest table. It never walks more tables
// than the list has, so a config with absurd tables is cheap to check.
func (d Dataset) MaxRows() int64 {
	l := d.listedRows()
	if d.Tables > len(l) {
		if l == nil {
			return d.Rows
		}
		return max(d.Rows, slices.Max(l))
	}
	var m int64
	for _, r := range l[:max(d.Tables, 0)] {
		m = max(m, r)
	}
	return m
}

// CacheCapacity is the capacity the cache policy gets: cache.size rows,
// or a fraction of the largest table's rows (of every table's, when all
// are the same size). A table of fewer rows gets only its own rows of it
// (plankit.Capacity, Storage): one capacity crosses to the plugin, so a
// fraction cannot apply to each table of different sizes separately.
func (c *Config) CacheCapacity() int64 {
	return min(c.Cache.CacheRows(c.Dataset.MaxRows()), c.Dataset.MaxRows())
}

// CacheRows is the number of rows per table the cache holds: a fraction of
// tableRows (at least one row) or the row count itself. It expects a size
// that passed Validate.
func (c Cache) CacheRows(tableRows int64) int64 {
	if c.Size < 1 {
		n := int64(c.Size * float64(tableRows))
		if n < 1 && c.Size > 0 {
			n = 1
		}
		return n
	}
	return int64(c.Size)
}
