package pluginhost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// DescribeArg is the argument that makes a plugin binary print its Info.
const DescribeArg = "describe"

// Describe runs "path describe" (bounded by Settings.DescribeTimeout) and
// returns the Info the binary prints. It fails if the binary does not
// answer, answers something other than an Info, names no valid kind, or
// speaks another plugin API version; in the last two cases the Info read is
// returned with the error.
func (h *Host) Describe(path string) (plugin.Info, error) {
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

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
