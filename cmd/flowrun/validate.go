package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/graph"
)

func newValidateCmd() *cobra.Command {
	var sets []string
	cmd := &cobra.Command{
		Use:   "validate GRAPH...",
		Short: "Check graphs without running them",
		Long: `Check graphs without running anything: unknown keys, wrong types, impossible
sizes, dangling or doubly-produced subjects, undeclared cycles, unknown stage
kinds, unknown or unlaunchable plugins. Every problem of every file is
reported, each with file:line and key path. Exits 0 only when all are valid.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var bad []error
			for _, path := range args {
				if _, err := validateGraph(path, sets); err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), err)
					bad = append(bad, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", path)
			}
			if len(bad) > 0 {
				return usageError{fmt.Errorf("%d of %d graphs invalid", len(bad), len(args))}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a graph key, `key=value` (repeatable)")
	return cmd
}

// validateGraph loads and checks a graph with a host that launches nothing.
func validateGraph(path string, sets []string) (*graph.Graph, error) {
	host, err := newHost(nil, io.Discard)
	if err != nil {
		return nil, err
	}
	defer host.Close()
	return loadGraph(path, sets, host)
}
