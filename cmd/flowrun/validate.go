package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
)

// validation is one graph's verdict, as validate --json prints it.
type validation struct {
	File   string            `json:"file"`
	OK     bool              `json:"ok"`
	Errors []validationError `json:"errors"`
}

// validationError is one problem: where (file, line, key path) and what.
// Line is 0 and Path empty where the problem has no place in the file
// (the graph as a whole, or a --set flag).
type validationError struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

func newValidateCmd() *cobra.Command {
	var sets []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate GRAPH...",
		Short: "Check graphs without running them",
		Long: `Check graphs without running anything: unknown keys, wrong types, impossible
sizes, dangling or doubly-produced subjects, undeclared cycles, unknown stage
kinds, unknown or unlaunchable plugins and, once the rest of a graph is
valid, what its plugins judge: the cache plugin (built in or a binary) is
asked what it needs (the windows it holds, whether it never bypasses) with
the options a run gives it, and the graph is checked against that; the
options of the other built-in plugins are tried as a run would configure
them (other plugin binaries are not launched). No data is read. Every problem of every file is reported,
each with file:line and key path. Exits 0 only when all are valid, 2
otherwise.

--json prints one JSON array on stdout instead, an object per graph:
  [{"file": "graphs/demo.yaml", "ok": false,
    "errors": [{"file": "graphs/demo.yaml", "line": 12,
                "path": "stages::plan::window::past", "message": "must be ≥ 0"}]}]`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var verdicts []validation
			bad := 0
			for _, path := range args {
				_, err := validateGraph(path, sets, true)
				if err != nil {
					bad++
				}
				switch {
				case asJSON:
					verdicts = append(verdicts, verdict(path, err))
				case err != nil:
					fmt.Fprintln(cmd.ErrOrStderr(), err)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", path)
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(verdicts); err != nil {
					return err
				}
			}
			if bad > 0 {
				return usageError{fmt.Errorf("%d of %d graphs invalid", bad, len(args))}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a graph key, `key=value` (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verdicts as JSON on stdout: [{file, ok, errors: [{file, line, path, message}]}]")
	return cmd
}

// verdict turns validateGraph's error into one graph's verdict.
func verdict(path string, err error) validation {
	v := validation{File: path, OK: err == nil, Errors: []validationError{}}
	var ue usageError
	if errors.As(err, &ue) {
		err = ue.err
	}
	for _, e := range config.Errors(err) {
		file := e.File
		if file == "" {
			file = path
		}
		msg := "invalid"
		if e.Err != nil {
			msg = e.Err.Error()
		}
		v.Errors = append(v.Errors, validationError{File: file, Line: e.Line, Path: e.Path, Message: msg})
	}
	return v
}

// validateGraph loads and checks a graph (loadGraph) with a host of its
// own, closed before it returns: the cache plugin it opened to ask its
// Needs, and the builtins it configured to try their options (with
// tryOptions), are dropped.
func validateGraph(path string, sets []string, tryOptions bool) (*graph.Graph, error) {
	host, err := newHost(nil, io.Discard, true)
	if err != nil {
		return nil, err
	}
	defer host.Close()
	return loadGraph(path, sets, host, tryOptions)
}
