package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Allowed values, in the order messages list them.
var (
	// DatasetKinds are the dataset sources flowrun knows.
	DatasetKinds = []string{"synthetic", "file"}
	// Localities are the synthetic access distributions (ScratchPipe Sec. V,
	// Tensor Casting Fig. 5, plus Zipf and uniform).
	Localities = []string{"random", "low", "medium", "high", "zipf", "uniform", CriteoKaggle}
	// EmbeddingPrecisions, EmbeddingRoundings and EmbeddingStorages are
	// the values of embedding.precision, .rounding and .storage
	// (sdk/kernel/quant's names; config imports no other package).
	EmbeddingPrecisions = []string{"fp32", "fp16", "int8", "int4", "int2"}
	EmbeddingRoundings  = []string{"nearest", "stochastic"}
	EmbeddingStorages   = []string{"packed", "emulated"}
	// EmbeddingOptimizers are the sparse optimizers for embedding rows.
	EmbeddingOptimizers = []string{"sgd", "adagrad", "rowwise_adagrad"}
)

// MaxBytes bounds every size derived from the dataset. Anything larger
// cannot be held in memory by one run, and bounding it keeps the products
// of int fields far from overflow everywhere they are used.
const MaxBytes = 1 << 40

// Sense limits: values beyond them are typing errors or would exhaust any
// machine long before the memory budget (framework/resources) could say
// so, or overflow an index the code sizes for them. Each is refused at
// its key with the figure.
const (
	// MaxCredits bounds nats.credits: every credit is a batch buffer per
	// stage (the pool grows by one per credit) and a queued message per
	// edge; beyond a few the pipeline overlaps no more.
	MaxCredits = 1024
	// MaxBatchSize bounds dataset.batch_size (2^24 samples): a batch's
	// arrays are sized by it, and its IDs' positions must stay well
	// inside 32 bits (MaxIDsPerBatch).
	MaxBatchSize = 1 << 24
	// MaxIDsPerBatch bounds tables × batch_size × lookups: stage kinds
	// index a batch's IDs with 32-bit positions.
	MaxIDsPerBatch = 1<<31 - 1
	// MaxTables bounds dataset.tables: each table is a mapped region in
	// the host tables and another in Storage, and Linux allows 65,530
	// mappings per process (vm.max_map_count).
	MaxTables = 4096
	// MaxRows bounds the rows of one table (2^40): the host tables keep a
	// bitmap of rows/8 bytes per table in memory.
	MaxRows = 1 << 40
	// MaxDim bounds dataset.dim, and MaxLookups dataset.lookups (the bag
	// size).
	MaxDim     = 1 << 16
	MaxLookups = 1 << 16
)

// validator is implemented by every part of the config that checks itself.
type validator interface{ Validate() error }

// Validate checks the whole config and returns every problem at once,
// joined, each placed at its key path with At. It walks the tree and calls
// Validate on each section (Dataset, PluginRef, Cache, Stage, Tracing,
// NATS), like the Collector's config validation, then checks what spans
// sections (the cache against the dataset, that there are stages).
//
// What needs the stage kinds or the plugins (unknown kinds, subjects,
// cycles, plugin binaries) is checked by the graph package.
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("no config")
	}
	errs := validateTree(reflect.ValueOf(c).Elem(), "", true)
	errs = append(errs, c.validateAcross()...)
	errs = append(errs, c.validateShards()...)
	return errors.Join(errs...)
}

// validateTree calls Validate on v (unless it is the root, whose Validate
// is the caller) and descends into struct fields by tag and map values in
// key order, so that errors come out in a stable order.
func validateTree(v reflect.Value, path string, root bool) []error {
	if v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		return validateTree(v.Elem(), path, root)
	}
	var errs []error
	if !root {
		if err := callValidate(v); err != nil {
			errs = append(errs, At(path, err))
		}
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("mapstructure"), ",")
			// Free-form options (`,remain` or untagged) belong to their
			// stage kind or plugin, which validates them itself.
			if name == "" || name == "-" || !sf.IsExported() {
				continue
			}
			errs = append(errs, validateTree(v.Field(i), joinPath(path, name), false)...)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String || v.Type().Elem().Kind() == reflect.Interface {
			return errs
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			errs = append(errs, validateTree(v.MapIndex(k), joinPath(path, k.String()), false)...)
		}
	}
	return errs
}

func callValidate(v reflect.Value) error {
	if !v.IsValid() || !v.CanInterface() {
		return nil
	}
	if val, ok := v.Interface().(validator); ok {
		return val.Validate()
	}
	// Map values are not addressable; a copy reaches pointer methods.
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	if val, ok := p.Interface().(validator); ok {
		return val.Validate()
	}
	return nil
}

var stageName = regexp.MustCompile(`^[a-z0-9_][a-z0-9_.-]*$`)

func (c *Config) validateAcross() []error {
	var errs []error
	if len(c.Stages) == 0 {
		errs = append(errs, At("stages", errors.New("a graph needs at least one stage (e.g. a load stage)")))
	}
	for name := range c.Stages {
		if !stageName.MatchString(name) {
			errs = append(errs, At(joinPath("stages", name),
				fmt.Errorf("stage name %q: use lower-case letters, digits, '_', '-' and '.'", name)))
		}
	}
	// A row count must fit in a table; fractions always do. With tables
	// of different sizes it must fit the largest: each table gets at most
	// its own rows of it (dataset.table_rows).
	if rows := c.Dataset.MaxRows(); rows >= 1 {
		if s := c.Cache.Size; s >= 1 && s == math.Trunc(s) && s > float64(rows) {
			errs = append(errs, At("cache::size",
				fmt.Errorf("a cache of %.0f rows is larger than a table (%s = %d); use at most %d rows or a fraction below 1",
					s, c.Dataset.rowsKey(), rows, rows)))
		}
	}
	errs = append(errs, c.validatePlacement()...)
	return append(errs, c.validateServing()...)
}

// Validate checks the dataset's own keys and that its sizes stay within
// MaxBytes.
func (d Dataset) Validate() error {
	var errs []error
	add := func(key string, err error) { errs = append(errs, At(key, err)) }
	if !slices.Contains(DatasetKinds, d.Kind) {
		add("kind", fmt.Errorf("unknown dataset kind %q (allowed: %s)", d.Kind, strings.Join(DatasetKinds, ", ")))
	}
	switch {
	case d.Kind == "file" && strings.TrimSpace(d.Path) == "":
		add("path", errors.New("must name a batch file when kind is file (write one with flowrun gen or flowrun convert)"))
	case d.Kind != "file" && d.Path != "":
		add("path", fmt.Errorf("is read only when kind is file, not %s (remove path, or set kind: file)", d.Kind))
	}
	// A factor out of its range is reported at its key; the sizes it is
	// a factor of are then not (a product of a wrong figure says nothing
	// more).
	factorsOK := true
	atLeast := func(key string, v int64, min int64) {
		if v < min {
			add(key, fmt.Errorf("must be ≥ %d, got %d", min, v))
			factorsOK = false
		}
	}
	atMost := func(key string, v, max int64, why string) {
		if v > max {
			add(key, fmt.Errorf("must be ≤ %d (%s), got %d", max, why, v))
			factorsOK = false
		}
	}
	atLeast("batches", int64(d.Batches), 1)
	atLeast("batch_size", int64(d.BatchSize), 1)
	atMost("batch_size", int64(d.BatchSize), MaxBatchSize, "2^24 samples")
	atLeast("tables", int64(d.Tables), 1)
	atMost("tables", int64(d.Tables), MaxTables, "each table is a mapped region")
	atLeast("rows", d.Rows, 1)
	atMost("rows", d.Rows, MaxRows, "2^40 rows per table")
	atLeast("dim", int64(d.Dim), 1)
	atMost("dim", int64(d.Dim), MaxDim, "2^16 values per row")
	atLeast("lookups", int64(d.Lookups), 1)
	atMost("lookups", int64(d.Lookups), MaxLookups, "2^16 IDs per sample and table")
	atLeast("dense_features", int64(d.DenseFeatures), 0)
	atLeast("eval_batches", int64(d.EvalBatches), 0)
	if !slices.Contains(Localities, d.Locality) {
		add("locality", fmt.Errorf("unknown locality %q (allowed: %s)", d.Locality, strings.Join(Localities, ", ")))
	}
	if d.Locality == "zipf" && !(d.ZipfS > 0 && !math.IsInf(d.ZipfS, 0)) {
		add("zipf_s", fmt.Errorf("must be a finite number > 0 when locality is zipf, got %g", d.ZipfS))
	}
	if math.IsNaN(d.LabelOffset) || math.IsInf(d.LabelOffset, 0) {
		add("label_offset", fmt.Errorf("must be a finite number, got %g", d.LabelOffset))
	}
	if !(d.LabelNoise >= 0) || math.IsInf(d.LabelNoise, 0) {
		add("label_noise", fmt.Errorf("must be a finite number ≥ 0, got %g", d.LabelNoise))
	}
	if d.CriteoSkew != CriteoSkewPooled && d.CriteoSkew != CriteoSkewPerTable {
		add("criteo_skew", fmt.Errorf("must be %s or %s, got %q", CriteoSkewPooled, CriteoSkewPerTable, d.CriteoSkew))
	}
	rowErrs := d.validateTableRows()
	errs = append(errs, rowErrs...)
	// Sizes only make sense once every factor is; the checks above
	// already reported the factors that are not.
	if factorsOK && len(rowErrs) == 0 {
		sizes := []sizeCheck{
			{"tables × batch_size × lookups × 8 B of IDs per batch", []int64{int64(d.Tables), int64(d.BatchSize), int64(d.Lookups), 8}},
			d.rowBytes(),
			{"batch_size × dense_features × 4 B of dense features per batch", []int64{int64(d.BatchSize), int64(d.DenseFeatures), 4}},
		}
		if ids := product(sizes[0].factors[:3]); ids.Cmp(big.NewInt(MaxIDsPerBatch)) > 0 {
			errs = append(errs, fmt.Errorf("tables × batch_size × lookups = %s IDs per batch is more than %d (their positions are 32-bit)", ids, MaxIDsPerBatch))
		}
		for _, s := range sizes {
			if n := product(s.factors); n.Cmp(big.NewInt(MaxBytes)) > 0 {
				f, _ := new(big.Float).SetInt(n).Float64()
				errs = append(errs, fmt.Errorf("%s = %s is more than the %s limit", s.what, FormatBytes(f), FormatBytes(MaxBytes)))
			}
		}
	}
	return errors.Join(errs...)
}

// validateTableRows checks dataset.table_rows (one row count ≥ 1 per
// table) and the shape the criteo-kaggle locality was fitted on (26
// tables, one lookup each).
func (d Dataset) validateTableRows() []error {
	var errs []error
	if n := len(d.TableRows); n > 0 && n != d.Tables {
		errs = append(errs, At("table_rows", fmt.Errorf("has %d entries for %d tables (dataset.tables); give one row count per table", n, d.Tables)))
	}
	for i, r := range d.TableRows {
		switch {
		case r < 1:
			errs = append(errs, At("table_rows", fmt.Errorf("entry %d (table %d) must be ≥ 1, got %d", i, i, r)))
		case r > MaxRows:
			errs = append(errs, At("table_rows", fmt.Errorf("entry %d (table %d) must be ≤ %d (2^40 rows per table), got %d", i, i, int64(MaxRows), r)))
		}
	}
	if d.Locality == CriteoKaggle {
		if d.Tables != len(CriteoKaggleRows) {
			errs = append(errs, At("tables", fmt.Errorf("must be %d with locality %s (Criteo Kaggle's categorical fields), got %d", len(CriteoKaggleRows), CriteoKaggle, d.Tables)))
		}
		if d.Lookups != 1 {
			errs = append(errs, At("lookups", fmt.Errorf("must be 1 with locality %s (one value per field and sample), got %d", CriteoKaggle, d.Lookups)))
		}
	}
	return errs
}

// sizeCheck is a size that must stay within MaxBytes: the product of
// factors, what says what it is.
type sizeCheck struct {
	what    string
	factors []int64
}

// rowBytes is the size check of all embedding rows; with per-table rows
// it expects a list as long as tables (validateTableRows).
func (d Dataset) rowBytes() sizeCheck {
	l := d.listedRows()
	if l == nil {
		return sizeCheck{"tables × rows × dim × 4 B of embedding rows", []int64{int64(d.Tables), d.Rows, int64(d.Dim), 4}}
	}
	var n int64
	for _, r := range l {
		n += min(r, math.MaxInt64-n) // saturates: the check then fails, as it should
	}
	return sizeCheck{"the rows of all tables × dim × 4 B of embedding rows", []int64{n, int64(d.Dim), 4}}
}

// rowsKey names the key a table's rows come from, for messages.
func (d Dataset) rowsKey() string {
	switch {
	case len(d.TableRows) > 0:
		return "the largest of dataset.table_rows"
	case d.Locality == CriteoKaggle:
		return "the largest Criteo Kaggle table"
	}
	return "dataset.rows"
}

// Validate checks the optimizer's name and its epsilon, and the
// precision keys.
func (e Embedding) Validate() error {
	var errs []error
	if !slices.Contains(EmbeddingOptimizers, e.Optimizer) {
		errs = append(errs, At("optimizer", fmt.Errorf("unknown optimizer %q (allowed: %s)", e.Optimizer, strings.Join(EmbeddingOptimizers, ", "))))
	}
	for _, k := range []struct {
		key, val string
		allowed  []string
	}{
		{"precision", e.Precision, EmbeddingPrecisions}, {"rounding", e.Rounding, EmbeddingRoundings}, {"storage", e.Storage, EmbeddingStorages},
	} {
		if !slices.Contains(k.allowed, k.val) {
			errs = append(errs, At(k.key, fmt.Errorf("unknown %s %q (allowed: %s)", k.key, k.val, strings.Join(k.allowed, ", "))))
		}
	}
	if e.TablesDir != "" {
		if st, err := os.Stat(e.TablesDir); err != nil || !st.IsDir() {
			errs = append(errs, At("tables_dir", fmt.Errorf("%q is not a directory (the disk tier's tables are created in it; make it first)", e.TablesDir)))
		}
	}
	if e.LowprecMinRows < 0 {
		errs = append(errs, At("lowprec_min_rows", fmt.Errorf("must be ≥ 0 (tables with fewer rows stay FP32), got %d", e.LowprecMinRows)))
	}
	if !(e.Epsilon > 0) || math.IsInf(e.Epsilon, 0) || e.Epsilon > math.MaxFloat32 {
		errs = append(errs, At("epsilon", fmt.Errorf("must be a finite number > 0 (it keeps Adagrad's first step finite), got %g", e.Epsilon)))
	}
	return errors.Join(errs...)
}

// Validate checks that a plugin is named, and the form of its pin.
func (p PluginRef) Validate() error {
	return errors.Join(At("plugin", checkPluginRef(p.Plugin)), At("sha256", checkPin(p.Plugin, p.SHA256)))
}

// Validate checks that a named model names a plugin and has a dim.
func (m NamedModel) Validate() error {
	var errs []error
	errs = append(errs, At("plugin", checkPluginRef(m.Plugin)))
	if m.Dim < 1 || m.Dim > MaxDim {
		errs = append(errs, At("dim", fmt.Errorf("must be from 1 to %d (the embedding dim of the model's own tables), got %d", MaxDim, m.Dim)))
	}
	return errors.Join(errs...)
}

// checkPin checks the form of a plugin binary's pin: 64 hex digits, and
// only beside a path (the pinned binary's sum is checked when the graph
// is built, framework/pluginhost).
func checkPin(ref, sum string) error {
	switch {
	case sum == "":
		return nil
	case strings.HasPrefix(strings.TrimSpace(ref), builtinPrefix):
		return fmt.Errorf("pins a plugin binary, and %s is linked into flowrun: remove sha256", ref)
	}
	if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
		return fmt.Errorf("%q is not a SHA-256 sum: want %d hex digits (flowrun plugins lock GRAPH writes them)", sum, 2*sha256.Size)
	}
	return nil
}

// builtinPrefix starts a reference to a plugin linked into flowrun
// (framework/pluginhost.BuiltinPrefix).
const builtinPrefix = "builtin:"

func checkPluginRef(ref string) error {
	switch {
	case strings.TrimSpace(ref) == "":
		return errors.New("must name a plugin: builtin:NAME or the path of a plugin binary")
	case ref == builtinPrefix:
		return errors.New("builtin: needs a plugin name, e.g. builtin:lru")
	}
	return nil
}

// Validate checks the cache plugin and the form of its size; that a row
// count fits in a table is checked by Config.Validate, which knows the
// dataset.
func (c Cache) Validate() error {
	var errs []error
	if err := checkPluginRef(c.Plugin); err != nil {
		errs = append(errs, At("plugin", err))
	}
	if err := checkPin(c.Plugin, c.SHA256); err != nil {
		errs = append(errs, At("sha256", err))
	}
	s := c.Size
	switch {
	case math.IsNaN(s) || math.IsInf(s, 0):
		errs = append(errs, At("size", fmt.Errorf("must be a finite number, got %g", s)))
	case s <= 0:
		errs = append(errs, At("size", fmt.Errorf("must be > 0: a fraction of each table's rows below 1 (e.g. 0.05) or a whole row count ≥ 1, got %g", s)))
	case s > 1 && s != math.Trunc(s):
		errs = append(errs, At("size", fmt.Errorf("%g is neither a fraction below 1 (e.g. 0.05) nor a whole row count ≥ 1", s)))
	}
	return errors.Join(errs...)
}

// subjectName is a NATS subject without wildcards, kept to characters that
// need no quoting anywhere flowrun prints or passes it.
var subjectName = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

func checkSubject(s string) error {
	if !subjectName.MatchString(s) {
		return fmt.Errorf("subject %q: use dot-separated tokens of letters, digits, '_' and '-' (no spaces or wildcards)", s)
	}
	return nil
}

// Validate checks a stage's own keys; how stages connect is the graph
// package's business, and the kind's options are its factory's.
func (s Stage) Validate() error {
	var errs []error
	if strings.TrimSpace(s.Kind) == "" {
		errs = append(errs, At("kind", errors.New("must name a stage kind, e.g. load, plan or train")))
	}
	if s.In != "" {
		errs = append(errs, At("in", checkSubject(s.In)))
	}
	errs = append(errs, checkSubjects("out", s.Out)...)
	errs = append(errs, checkSubjects("feedback", s.Feedback)...)
	return errors.Join(errs...)
}

func checkSubjects(key string, subjects []string) []error {
	var errs []error
	seen := map[string]int{}
	for i, sub := range subjects {
		p := joinPath(key, strconv.Itoa(i))
		if j, ok := seen[sub]; ok {
			errs = append(errs, At(p, fmt.Errorf("subject %q is listed twice (also item %d)", sub, j)))
			continue
		}
		seen[sub] = i
		if err := checkSubject(sub); err != nil {
			errs = append(errs, At(p, err))
		}
	}
	return errs
}

// Exporters lists the forms of tracing.exporter, for messages.
const Exporters = "none, stdout, file:PATH, otlp-grpc://HOST:PORT, otlp-http://HOST:PORT"

// Validate checks the exporter's form; whether the endpoint answers is
// the telemetry package's concern.
func (t Tracing) Validate() error {
	return At("exporter", checkExporter(t.Exporter))
}

// checkExporter checks the form of an exporter spec: the forms the
// telemetry package builds exporters from (config owns the syntax, so that
// it needs no framework package to check it).
func checkExporter(e string) error {
	switch {
	case e == "none" || e == "stdout":
		return nil
	case strings.HasPrefix(e, "file:"):
		if e == "file:" {
			return fmt.Errorf("exporter %q: empty file path", e)
		}
		return nil
	case strings.HasPrefix(e, "otlp-grpc://"), strings.HasPrefix(e, "otlp-http://"):
		u, err := url.Parse(e)
		if err != nil {
			return fmt.Errorf("exporter %q: %w", e, err)
		}
		if err := checkHostPort(u.Host); err != nil {
			return fmt.Errorf("exporter %q: endpoint must be HOST:PORT, PORT from 1 to 65535: %w", e, err)
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("exporter %q: only HOST:PORT (and a path for otlp-http) is allowed", e)
		}
		if p := u.EscapedPath(); p != "" && p != "/" && u.Scheme == "otlp-grpc" {
			return fmt.Errorf("exporter %q: otlp-grpc takes no path", e)
		}
		return nil
	}
	return fmt.Errorf("unknown exporter %q (allowed: %s)", e, Exporters)
}

// Validate checks the server URL's syntax and the credits.
func (n NATS) Validate() error {
	var errs []error
	if n.URL != "" {
		hp, ok := strings.CutPrefix(n.URL, "nats://")
		var err error
		if !ok {
			err = errors.New("must be empty (an embedded server) or nats://HOST:PORT")
		} else {
			err = checkHostPort(hp)
		}
		if err != nil {
			errs = append(errs, At("url", fmt.Errorf("%q: %w", n.URL, err)))
		}
	}
	// 0 is a hand-off: a batch is acknowledged only when the next stage
	// takes it, so every stage works on its own batch in lockstep
	// (ScratchPipe's pipeline, whose windows assume exactly that).
	switch {
	case n.Credits < 0:
		errs = append(errs, At("credits", fmt.Errorf("must be ≥ 0 (0: each batch is handed straight to the next stage, no queue), got %d", n.Credits)))
	case n.Credits > MaxCredits:
		errs = append(errs, At("credits", fmt.Errorf("must be ≤ %d (each credit adds a batch buffer and a queued message per stage; a few already keep every stage busy), got %d", MaxCredits, n.Credits)))
	}
	return errors.Join(errs...)
}

func checkHostPort(hp string) error {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return fmt.Errorf("%q is not HOST:PORT", hp)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", hp)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}

func product(factors []int64) *big.Int {
	n := big.NewInt(1)
	for _, f := range factors {
		n.Mul(n, big.NewInt(f))
	}
	return n
}

// FormatBytes writes a size in binary units for messages about sizes,
// whole where it is (960 MiB) and to one decimal where not (1.5 GiB).
func FormatBytes(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if n == math.Trunc(n) {
		return fmt.Sprintf("%.0f %s", n, units[i])
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
