package pluginhost

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// DescribeArg is the argument that makes a plugin binary print its Info.
const DescribeArg = "describe"

// Describe runs "path describe" (bounded by Settings.DescribeTimeout) and
// returns the Info the binary prints. It fails if the binary does not
// answer, answers something other than an Info, names no valid kind, or
// speaks another plugin API version; in the last two cases the Info read is
// returned with the error. A binary with a pin (Pin) whose sum differs is
// refused without running. Describe runs any executable: a caller that
// must not, Inspects it first.
func (h *Host) Describe(path string) (plugin.Info, error) {
	if abs, err := filepath.Abs(path); err == nil && h.pinned(abs) {
		if _, _, err := h.checkPin("", abs); err != nil {
			return plugin.Info{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.describeTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, DescribeArg)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %v", h.describeTimeout)
		}
		if tail := lastLine(stderr.String()); tail != "" {
			err = fmt.Errorf("%w: %s", err, tail)
		}
		return plugin.Info{}, fmt.Errorf("%s %s: %w", path, DescribeArg, err)
	}
	var info plugin.Info
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		return plugin.Info{}, fmt.Errorf("%s %s: not a plugin description: %v (output %q)", path, DescribeArg, err, truncate(stdout.String(), 200))
	}
	if !info.Kind.Valid() {
		return info, fmt.Errorf("%s %s: unknown plugin kind %q", path, DescribeArg, info.Kind)
	}
	if info.APIVersion != plugin.APIVersion {
		return info, fmt.Errorf("%s %s: %s plugin %q speaks plugin API version %d; this host speaks %d", path, DescribeArg, info.Kind, info.Name, info.APIVersion, plugin.APIVersion)
	}
	return info, nil
}

// Binary is what Inspect learns of an executable without running it.
type Binary struct {
	// Path is the absolute path.
	Path string
	// SHA256 is its sum, in hex, as a pin gives it.
	SHA256 string
	// GoVersion is the Go release that built it; empty for a binary that
	// is not a Go program (or whose build information is stripped).
	GoVersion string
	// Module is the main module's path and version ("" outside Go).
	Module string
	// GoPlugin reports that the binary links github.com/hashicorp/go-plugin,
	// as every flowrun plugin written in Go does.
	GoPlugin bool
}

// GoPluginModule is the module every Go plugin binary links.
const GoPluginModule = "github.com/hashicorp/go-plugin"

// Inspect reads what can be known of the executable at path without
// running it: its sum and, for a Go program, its build information.
func Inspect(path string) (Binary, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Binary{}, err
	}
	if err := checkExecutable("", abs); err != nil {
		return Binary{}, err
	}
	b := Binary{Path: abs}
	if b.SHA256, err = FileSHA256(abs); err != nil {
		return Binary{}, err
	}
	bi, err := buildinfo.ReadFile(abs)
	if err != nil {
		return b, nil // not a Go program
	}
	b.GoVersion = bi.GoVersion
	b.Module = strings.TrimSpace(bi.Main.Path + " " + bi.Main.Version)
	for _, d := range bi.Deps {
		if d.Path == GoPluginModule {
			b.GoPlugin = true
		}
	}
	return b, nil
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
