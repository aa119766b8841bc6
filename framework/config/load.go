package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"gopkg.in/yaml.v3"
)

// Load reads the graph file at path, applies sets (`--set key=value`
// flags: a dotted key and a YAML value, e.g. `dataset.locality=high` or
// `stages.load.out=[a,b]`), decodes the result over Default() with unknown
// keys and wrong types rejected, and validates it.
//
// Every problem is returned at once: the error is an errors.Join of *Error
// values, each with the file, the line and the key path (see Errors to
// list them). On error the Config is nil; the Source is returned whenever
// the file could be read, so a caller can annotate its own later errors.
//
// Keys are case-insensitive (viper lower-cases them), so stage names are
// lower case; the kind's own keys under a stage are left in
// Stage.Options for the graph package to decode through the stage kind.
func Load(path string, sets []string) (*Config, *Source, error) {
	cfg, src, err := LoadPartial(path, sets)
	if err != nil {
		return nil, src, err
	}
	return cfg, src, nil
}

// LoadPartial is Load for a caller that wants every error of a graph, not
// only those of its tree (flowrun validate): when the file is a
// well-formed mapping it returns the decoded Config also with errors,
// each key that failed to decode left at its default, so that later
// checks (the graph builder's) can add theirs. Such a Config is invalid:
// never run it. See Merge for joining the later errors.
func LoadPartial(path string, sets []string) (*Config, *Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, errors.Join(&Error{File: path, Err: fmt.Errorf("read graph: %w", err)})
	}
	src, err := parseSource(path, data)
	if err != nil {
		// Without a well-formed document nothing below can say more.
		return nil, src, src.Annotate(err)
	}

	// The file's tree, with the --set flags applied to it before viper
	// sees it: viper's own Set overrides leaves and merges maps, so it
	// could neither replace a mapping (`cache.options={}`) nor remove a
	// key (`cache.options.victim=null`).
	var tree map[string]any
	if err := yaml.Unmarshal(data, &tree); err != nil {
		return nil, src, src.Annotate(&Error{File: path, Err: fmt.Errorf("read graph: %w", err)})
	}
	if tree == nil {
		tree = map[string]any{} // an empty file: all defaults
	}
	var errs []error
	for _, set := range sets {
		key, value, err := parseSet(set)
		if err != nil {
			errs = append(errs, &Error{File: path, Err: fmt.Errorf("--set %s: %w", set, err)})
			continue
		}
		applySet(tree, strings.Split(key, KeyDelimiter), value)
		src.sets[key] = set
	}
	if err := checkWholeSize(tree); err != nil {
		errs = append(errs, err)
	}
	// "::" rather than "." so that a dot in a stage name or an option key
	// does not split it into nested keys.
	v := viper.NewWithOptions(viper.KeyDelimiter(KeyDelimiter))
	if err := v.MergeConfigMap(tree); err != nil {
		return nil, src, src.Annotate(&Error{File: path, Err: fmt.Errorf("read graph: %w", err)})
	}

	cfg := Default()
	err = v.UnmarshalExact(cfg, func(dc *mapstructure.DecoderConfig) { strictDecoding(dc) })
	errs = append(errs, decodeErrors(err, reflect.TypeOf(cfg)))
	if cfg.Name == "" {
		cfg.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	cfg.Echo = v.AllSettings()
	resolvePaths(cfg, src, filepath.Dir(path))
	// Validate even after decoding errors: a key that failed to decode
	// kept its default, so the rest is still worth checking and the user
	// gets every error in one go.
	errs = append(errs, cfg.Validate())
	return cfg, src, src.Annotate(errors.Join(errs...))
}

// checkWholeSize refuses cache.size written as a float equal to a whole
// number (1.0, 2.0): size is a fraction below 1 or a row count, so 1.0
// would be one row while whoever wrote it surely meant the whole table.
// YAML keeps the difference (1 decodes as an int, 1.0 as a float); the
// decoded Config no longer does.
func checkWholeSize(tree map[string]any) error {
	cache, ok := lookupFold(tree, "cache").(map[string]any)
	if !ok {
		return nil
	}
	f, ok := lookupFold(cache, "size").(float64)
	if !ok || f < 1 || f != math.Trunc(f) {
		return nil
	}
	return At("cache::size", fmt.Errorf("%.1f would be a cache of %.0f rows: size is a fraction below 1 (e.g. 0.05) "+
		"or a row count written without a decimal point (%.0f); for whole tables give their row count", f, f, f))
}

// lookupFold is m's value at key, matched without case as viper matches
// keys; nil when absent.
func lookupFold(m map[string]any, key string) any {
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

// parseSet splits a `--set key=value` argument into a viper key (joined by
// KeyDelimiter) and a value, checking that the key is in the schema. The
// value is YAML (`7`, `0.1`, `high`, `[a,b]`, `{ways: 4}`), except for
// string keys, which take the text as it is so that `--set name=007` stays
// "007". `null` (or `~`) for any key is nil: the key is removed.
func parseSet(set string) (string, any, error) {
	rawKey, raw, ok := strings.Cut(set, "=")
	rawKey = strings.TrimSpace(rawKey)
	if !ok || rawKey == "" {
		return "", nil, errors.New("want key=value, e.g. --set dataset.batches=100")
	}
	sep := "."
	if strings.Contains(rawKey, KeyDelimiter) {
		sep = KeyDelimiter // lets a key contain dots: stages::a.b::in
	}
	segs := strings.Split(strings.ToLower(rawKey), sep)
	for _, s := range segs {
		if s == "" {
			return "", nil, fmt.Errorf("key %q has an empty part", rawKey)
		}
	}
	t, err := schemaAt(reflect.TypeOf(Config{}), segs)
	if err != nil {
		return "", nil, err
	}
	key := strings.Join(segs, KeyDelimiter)
	if r := strings.TrimSpace(raw); r == "null" || r == "~" {
		return key, nil, nil
	}
	if t.Kind() == reflect.String {
		return key, raw, nil
	}
	if strings.TrimSpace(raw) == "" {
		return "", nil, fmt.Errorf("%s needs a value (%s)", rawKey, describeType(t))
	}
	var value any
	if err := yaml.Unmarshal([]byte(raw), &value); err != nil {
		return "", nil, fmt.Errorf("value %q is not valid YAML: %w", raw, err)
	}
	return key, value, nil
}

// applySet puts value at the key path segs of tree, replacing what was
// there (a mapping or a list is replaced whole, not merged), or removes
// the key when value is nil, so that its default applies. Keys are matched
// without case, as viper matches them; missing mappings on the way are
// made, and a scalar on the way is replaced by a mapping.
func applySet(tree map[string]any, segs []string, value any) {
	m := tree
	for i, seg := range segs {
		key := seg
		for k := range m {
			if strings.EqualFold(k, seg) {
				key = k
				break
			}
		}
		if i == len(segs)-1 {
			if value == nil {
				delete(m, key)
			} else {
				m[key] = value
			}
			return
		}
		next, ok := m[key].(map[string]any)
		if !ok {
			if value == nil {
				return // nothing there to remove
			}
			next = map[string]any{}
			m[key] = next
		}
		m = next
	}
}

// fixStagePlugins applies fix to every "plugin" key, at any depth, of a
// stage's options (a stage that opens plugins of its own, a shadow's
// cache policies): a plugin reference follows the one rule wherever it
// is written.
func fixStagePlugins(path string, v any, fix func(key string, ref *string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && strings.EqualFold(k, "plugin") {
				fix(joinPath(path, strings.ToLower(k)), &s)
				v[k] = s
				continue
			}
			fixStagePlugins(joinPath(path, strings.ToLower(k)), x, fix)
		}
	case []any:
		for i, x := range v {
			fixStagePlugins(joinPath(path, strconv.Itoa(i)), x, fix)
		}
	}
}

// resolvePaths applies the one rule for relative paths in a graph (the
// plugin binaries, dataset.path, the file of tracing.exporter: file:PATH):
// a path written in the graph file is relative to the file's directory,
// so a graph works from any working directory; a path given with --set is
// relative to the working directory, where the shell that completed it
// is. Load does it before Validate: a validated config is never changed.
func resolvePaths(cfg *Config, src *Source, dir string) {
	fix := func(key string, ref *string) {
		if *ref == "" || strings.HasPrefix(*ref, builtinPrefix) || filepath.IsAbs(*ref) {
			return
		}
		if _, fromSet := src.setFor(key); fromSet {
			return
		}
		*ref = filepath.Join(dir, *ref)
	}
	fix("model::plugin", &cfg.Model.Plugin)
	fix("kernel::plugin", &cfg.Kernel.Plugin)
	fix("cache::plugin", &cfg.Cache.Plugin)
	for name, d := range cfg.Devices {
		fix(joinPath("devices", strings.ToLower(name), "plugin"), &d.Plugin)
		cfg.Devices[name] = d
	}
	for name, m := range cfg.Models {
		fix(joinPath("models", strings.ToLower(name), "plugin"), &m.Plugin)
		fix(joinPath("models", strings.ToLower(name), "checkpoint"), &m.Checkpoint)
		cfg.Models[name] = m
	}
	for name, st := range cfg.Stages {
		fixStagePlugins(joinPath("stages", strings.ToLower(name)), st.Options, fix)
	}
	fix("dataset::path", &cfg.Dataset.Path)
	if file, ok := strings.CutPrefix(cfg.Tracing.Exporter, "file:"); ok {
		fix("tracing::exporter", &file)
		cfg.Tracing.Exporter = "file:" + file
	}
}
