package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// TestPluginsList checks that `plugins list` shows every plugin linked into
// flowrun (components.go), one row each, as builtin:NAME with its kind.
func TestPluginsList(t *testing.T) {
	t.Parallel()
	r := mustFlowrun(t, "plugins", "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "KIND") {
		t.Fatalf("no header:\n%s", r.stdout)
	}
	rows := map[string]string{} // reference → kind
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Errorf("short row %q", l)
			continue
		}
		rows[f[1]] = f[0]
	}
	b := builtins()
	want := map[string]string{}
	add := func(kind plugin.Kind, names []string) {
		for _, n := range names {
			want["builtin:"+n] = string(kind)
		}
	}
	add(plugin.KindCache, keys(b.Caches))
	add(plugin.KindKernel, keys(b.Kernels))
	add(plugin.KindModel, keys(b.Models))
	add(plugin.KindDevice, keys(b.Devices))
	// The example plugin is a third party's: flowrun does not link it in.
	if _, ok := rows["builtin:clock"]; ok {
		t.Error("builtin:clock listed: the example plugin is linked into flowrun")
	}
	for ref, kind := range want {
		if rows[ref] != kind {
			t.Errorf("%s: listed as %q, want kind %s", ref, rows[ref], kind)
		}
	}
	if len(rows) != len(want) {
		t.Errorf("%d plugins listed, %d linked in:\n%s", len(rows), len(want), r.stdout)
	}
	for _, ref := range []string{"builtin:lru", "builtin:scratchpipe", "builtin:cpu", "builtin:logreg", "builtin:hbm"} {
		if _, ok := rows[ref]; !ok {
			t.Errorf("%s not listed", ref)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestPluginsDescribe asks the example plugin's binary to describe itself:
// JSON naming a cache plugin of the current API version.
func TestPluginsDescribe(t *testing.T) {
	t.Parallel()
	bin := needBin(t, "flowrun-cache-clock")
	r := mustFlowrun(t, "plugins", "describe", bin)
	var info plugin.Info
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if info.Kind != plugin.KindCache || info.Name != "clock" || info.APIVersion != plugin.APIVersion {
		t.Errorf("describe: %+v, want the clock cache plugin, API version %d", info, plugin.APIVersion)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil || raw["kind"] != "cache" {
		t.Errorf(`describe printed no "kind": "cache":%s`, r.stdout)
	}
}

// TestPluginsDescribeNotAPlugin: describing something that is not a plugin
// fails and says what it is.
func TestPluginsDescribeNotAPlugin(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("true"); err != nil {
		t.Skip("no true(1)")
	}
	path, _ := exec.LookPath("true")
	r := flowrun(t, "plugins", "describe", path)
	if r.err == nil {
		t.Fatalf("describe %s succeeded:\n%s", path, r.stdout)
	}
}

// TestVersion checks `flowrun version` and its plugin API version.
func TestVersion(t *testing.T) {
	t.Parallel()
	r := mustFlowrun(t, "version")
	want := regexp.MustCompile(fmt.Sprintf(`^flowrun \S+ \(plugin API %d\)\n$`, plugin.APIVersion))
	if !want.MatchString(r.stdout) {
		t.Errorf("version printed %q", r.stdout)
	}
}

// TestUsageErrors checks that bad arguments are usage errors (exit code 2),
// and a graph that is not there too.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"NoGraph":      {"run"},
		"UnknownFlag":  {"run", demo, "--colour"},
		"MissingGraph": {"run", "testdata/no-such-graph.yaml"},
		"BadSet":       {"run", demo, "--set", "dataset.batches=many"},
		"BadTrace":     {"run", demo, "--trace", "jaeger"},
		"VersionArgs":  {"version", "extra"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := flowrun(t, args...)
			var ue usageError
			if r.err == nil {
				t.Fatalf("flowrun %v succeeded", args)
			}
			// Cobra's own argument checks are not usageErrors: main exits 1
			// for them, which is still non-zero.
			if name != "NoGraph" && name != "VersionArgs" && !errors.As(r.err, &ue) {
				t.Errorf("flowrun %v: %v, want a usage error (exit code %d)", args, r.err, exitUsage)
			}
		})
	}
}
