package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print flowrun's version and plugin API version",
		Long: `Print flowrun's version (dev-COMMIT for a build from a git checkout) and
the plugin API version it speaks. A plugin binary built against another API
version is refused when a graph names it; flowrun plugins describe PATH
prints a binary's own API version.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version
			if bi, ok := debug.ReadBuildInfo(); ok && v == "dev" {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						v = "dev-" + s.Value[:min(12, len(s.Value))]
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "flowrun %s (plugin API %d)\n", v, plugin.APIVersion)
			return nil
		},
	}
}
