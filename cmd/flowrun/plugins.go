package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/sdk/plugin"
)

func newPluginsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List built-in plugins, describe a plugin binary, or pin a graph's binaries",
		Long: `List the plugins linked into flowrun, ask a plugin binary what it is, or
pin the binaries a graph names.

  flowrun plugins list                              # every builtin:NAME a graph can name
  flowrun plugins describe bin/flowrun-cache-lru    # kind, name, version, ops, options
  flowrun plugins lock graphs/demo-subprocess.yaml  # write each binary's sha256 beside it

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
	cmd.AddCommand(newDescribeCmd(), newLockCmd())
	return cmd
}

func newDescribeCmd() *cobra.Command {
	var run bool
	var pin string
	cmd := &cobra.Command{
		Use:   "describe PATH",
		Short: "Print what a plugin binary says about itself, as JSON",
		Long: `Describe runs "PATH describe" and prints the plugin's description. It first
reads the binary without running it: one that is not a Go program linking
github.com/hashicorp/go-plugin is not run unless --exec is given, and with
--sha256 one whose sum differs is not run at all.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			bin, err := pluginhost.Inspect(args[0])
			if err != nil {
				return usageError{err}
			}
			if !bin.GoPlugin && !run {
				what := "not a Go program"
				if bin.GoVersion != "" {
					what = "a Go program (" + bin.Module + ") that does not link " + pluginhost.GoPluginModule
				}
				return usageError{fmt.Errorf("%s is %s, so not a flowrun plugin written in Go; not running it (--exec runs %q anyway)", bin.Path, what, bin.Path+" "+pluginhost.DescribeArg)}
			}
			host, err := newHost(nil, cmd.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			defer host.Close()
			if pin != "" {
				if err := host.Pin(bin.Path, pin); err != nil {
					return usageError{err}
				}
			}
			info, err := host.Describe(bin.Path)
			var refused *pluginhost.RefusedError
			if errors.As(err, &refused) {
				return usageError{err}
			}
			if err != nil {
				return usageError{err} // the argument is no plugin binary
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(info)
		},
	}
	cmd.Flags().BoolVar(&run, "exec", false, "run the binary even if it does not look like a Go plugin")
	cmd.Flags().StringVar(&pin, "sha256", "", "refuse to run the binary unless its SHA-256 is `HEX`")
	return cmd
}

func newLockCmd() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "lock GRAPH",
		Short: "Pin every plugin binary the graph names to its current SHA-256",
		Long: `Lock computes the SHA-256 of every plugin binary the graph names (model,
kernel, cache and devices given as paths) and writes it beside the plugin
key as sha256: HEX, replacing an older pin; the rest of the file is kept
as it is. A pinned binary whose sum differs is refused before it runs.
With --dry-run the pins are printed as --set flags and the file is left
alone.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			bins, err := lockGraph(args[0], dryRun)
			if err != nil {
				return err
			}
			if dryRun {
				printPins(cmd.OutOrStdout(), bins)
				return nil
			}
			for _, b := range bins {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: pinned %s to sha256 %s\n", args[0], b.key(), b.pin)
			}
			if len(bins) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: no plugin binaries to pin (every plugin is builtin:)\n", args[0])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the pins as --set flags instead of writing them")
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
