package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/flowrun/flowrun/framework/atomicfile"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/pluginhost"
)

// pluginBinary is one plugin binary a graph names: its keys in the file
// (model, devices::gpu), its resolved path and its pin.
type pluginBinary struct {
	keys []string
	path string
	pin  string
}

// key is the section's key path, as errors name it.
func (b pluginBinary) key() string { return strings.Join(b.keys, config.KeyDelimiter) }

// pluginBinaries lists the plugin references of cfg that are paths, in
// the order of the file's sections: model, kernel, cache, devices by name.
func pluginBinaries(cfg *config.Config) []pluginBinary {
	var out []pluginBinary
	add := func(ref, pin string, keys ...string) {
		if ref != "" && !strings.HasPrefix(ref, pluginhost.BuiltinPrefix) {
			out = append(out, pluginBinary{keys: keys, path: ref, pin: pin})
		}
	}
	add(cfg.Model.Plugin, cfg.Model.SHA256, "model")
	add(cfg.Kernel.Plugin, cfg.Kernel.SHA256, "kernel")
	add(cfg.Cache.Plugin, cfg.Cache.SHA256, "cache")
	for _, name := range slices.Sorted(maps.Keys(cfg.Devices)) {
		d := cfg.Devices[name]
		add(d.Plugin, d.SHA256, "devices", name)
	}
	return out
}

// pinPlugins gives host the pins cfg sets, so that it refuses a binary
// whose sum differs, at the reference's key.
func pinPlugins(host *pluginhost.Host, cfg *config.Config) error {
	for _, b := range pluginBinaries(cfg) {
		if b.pin == "" {
			continue
		}
		if err := host.Pin(b.path, b.pin); err != nil {
			return config.At(b.key()+config.KeyDelimiter+"sha256", err)
		}
	}
	return nil
}

// lockGraph computes the sum of every plugin binary the graph at path
// names and writes it as the reference's sha256, beside its plugin key,
// changing nothing else in the file; with dryRun it prints them as --set
// flags instead. It returns the binaries it pinned.
func lockGraph(path string, dryRun bool) ([]pluginBinary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageError{err}
	}
	// The pins the file has are replaced: a malformed one must not stop
	// the graph from loading.
	cfg, _, err := config.Load(path, clearPins(data))
	if err != nil {
		return nil, usageError{err}
	}
	bins := pluginBinaries(cfg)
	for i := range bins {
		bin, err := pluginhost.Inspect(bins[i].path)
		if err != nil {
			return nil, usageError{config.At(bins[i].key()+config.KeyDelimiter+"plugin", err)}
		}
		bins[i].pin = bin.SHA256
	}
	if dryRun || len(bins) == 0 {
		return bins, nil
	}
	locked, err := writePins(data, bins)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := replaceFile(path, locked); err != nil {
		return nil, err
	}
	// The edit is by lines: read the file back as a run will.
	cfg, _, err = config.Load(path, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: the locked graph does not load: %w", path, err)
	}
	for i, b := range pluginBinaries(cfg) {
		if b.pin != bins[i].pin {
			return nil, fmt.Errorf("%s: %s: wrote sha256 %s, read back %q", path, b.key(), bins[i].pin, b.pin)
		}
	}
	return bins, nil
}

// clearPins are the --set flags that empty every sha256 the YAML text
// data gives a plugin reference.
func clearPins(data []byte) []string {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil // Load reports it
	}
	var sets []string
	clear := func(sec *yaml.Node, keys ...string) {
		if mapValue(sec, "sha256") != nil {
			sets = append(sets, strings.Join(keys, ".")+".sha256=")
		}
	}
	root := doc.Content[0]
	for _, k := range []string{"model", "kernel", "cache"} {
		clear(mapValue(root, k), k)
	}
	if devs := mapValue(root, "devices"); devs != nil && devs.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(devs.Content); i += 2 {
			clear(devs.Content[i+1], "devices", devs.Content[i].Value)
		}
	}
	return sets
}

// writePins sets each binary's sha256 in the YAML text data: it replaces
// the value of an existing sha256 key, or adds the key after the plugin
// key (a line of its own in a block mapping, ", sha256: …" in a flow
// one). Comments and layout stay as they are.
func writePins(data []byte, bins []pluginBinary) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	type edit struct {
		line, col int // 0-based line; rune column where text goes
		cut       int // runes replaced
		text      string
		newLine   bool // text is a line of its own, inserted before line
	}
	var edits []edit
	for _, b := range bins {
		sec := doc.Content[0]
		for _, k := range b.keys {
			if sec = mapValue(sec, k); sec == nil || sec.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("%s is not a mapping in the file (given with --set?)", b.key())
			}
		}
		ref := mapValue(sec, "plugin")
		if ref == nil {
			return nil, fmt.Errorf("%s has no plugin key in the file", b.key())
		}
		if old := mapValue(sec, "sha256"); old != nil {
			edits = append(edits, edit{line: old.Line - 1, col: old.Column - 1, cut: scalarLen(old), text: quoted(b.pin)})
			continue
		}
		keyNode := mapKey(sec, "plugin")
		if sec.Style&yaml.FlowStyle != 0 {
			edits = append(edits, edit{line: ref.Line - 1, col: ref.Column - 1 + scalarLen(ref), text: ", sha256: " + quoted(b.pin)})
			continue
		}
		indent := strings.Repeat(" ", keyNode.Column-1)
		edits = append(edits, edit{line: ref.Line, text: indent + "sha256: " + quoted(b.pin), newLine: true})
	}
	// Apply from the end, so that earlier positions stay valid.
	slices.SortFunc(edits, func(a, b edit) int {
		if a.line != b.line {
			return b.line - a.line
		}
		return b.col - a.col
	})
	for _, e := range edits {
		if e.newLine {
			lines = slices.Insert(lines, e.line, e.text)
			continue
		}
		r := []rune(lines[e.line])
		lines[e.line] = string(r[:e.col]) + e.text + string(r[e.col+e.cut:])
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// quoted is a sum as a YAML string: quoted, since hex digits can read as
// a number (all digits, or digits around one e).
func quoted(sum string) string { return `"` + sum + `"` }

// mapKey and mapValue find key in a mapping node.
func mapKey(m *yaml.Node, key string) *yaml.Node {
	for i := 0; m != nil && m.Kind == yaml.MappingNode && i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; m != nil && m.Kind == yaml.MappingNode && i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// scalarLen is how many runes a one-line scalar takes in the file,
// quotes included.
func scalarLen(n *yaml.Node) int {
	l := len([]rune(n.Value))
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		return l + 2 + strings.Count(n.Value, `"`) + strings.Count(n.Value, `\`)
	case n.Style&yaml.SingleQuotedStyle != 0:
		return l + 2 + strings.Count(n.Value, `'`)
	}
	return l
}

// replaceFile writes data to path through a temporary file in its
// directory and a rename, keeping its mode: a crash leaves the old file
// or the new one, never half of one.
func replaceFile(path string, data []byte) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, st.Mode().Perm())
}

// printPins writes the pins as --set flags, one line each.
func printPins(w io.Writer, bins []pluginBinary) {
	for _, b := range bins {
		fmt.Fprintf(w, "--set %s.sha256=%s  # %s\n", strings.Join(b.keys, "."), b.pin, b.path)
	}
}
