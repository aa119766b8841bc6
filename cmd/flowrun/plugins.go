package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/sdk/plugin"
)

func newPluginsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List built-in plugins or describe a plugin binary",
		Long: `List the plugins linked into flowrun, or ask a plugin binary what it is.

  flowrun plugins list                              # every builtin:NAME a graph can name
  flowrun plugins describe bin/flowrun-cache-lru    # kind, name, version, ops, options

A graph names a plugin as builtin:NAME (linked in) or by the path of its
binary (run as a go-plugin subprocess); describe runs the binary with the
argument "describe" and prints the JSON it answers: its kind, name,
version, API version, the kernel ops it has and the options it takes
(plugin.Info.Config). A path that is not a plugin binary is a usage error
(exit 2).`,
	}
	commandsOnly(cmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the plugins linked into flowrun (usable as plugin: builtin:NAME)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			infos, err := describeBuiltins(cmd.Context())
			if err != nil {
				return err
			}
			sort.Slice(infos, func(i, j int) bool {
				if infos[i].Kind != infos[j].Kind {
					return infos[i].Kind < infos[j].Kind
				}
				return infos[i].Name < infos[j].Name
			})
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tREFERENCE\tVERSION\tDESCRIPTION")
			for _, in := range infos {
				fmt.Fprintf(tw, "%s\tbuiltin:%s\t%s\t%s\n", in.Kind, in.Name, in.Version, in.Description)
			}
			return tw.Flush()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "describe PATH",
		Short: "Print what a plugin binary says about itself, as JSON",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			host, err := newHost(nil, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer host.Close()
			info, err := host.Describe(args[0])
			if err != nil {
				return usageError{err} // the argument is no plugin binary
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(info)
		},
	})
	return cmd
}

// describeBuiltins asks every linked-in plugin for its Info.
func describeBuiltins(ctx context.Context) ([]plugin.Info, error) {
	b := builtins()
	var bases []plugin.Base
	for _, f := range b.Caches {
		bases = append(bases, f())
	}
	for _, f := range b.Kernels {
		bases = append(bases, f())
	}
	for _, f := range b.Models {
		bases = append(bases, f())
	}
	for _, f := range b.Devices {
		bases = append(bases, f())
	}
	infos := make([]plugin.Info, 0, len(bases))
	for _, p := range bases {
		info, err := p.Info(ctx)
		if err != nil {
			return nil, err
		}
		infos = append(infos, info)
	}
	return infos, nil
}
