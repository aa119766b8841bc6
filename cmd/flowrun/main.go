// Command flowrun runs recommendation-model training and inference graphs:
// YAML dataflow graphs of stages joined by NATS subjects, with cache
// policies, kernels, models and devices as plugins (built in or separate
// processes).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/pluginhost"
)

// Exit codes, listed in flowrun --help and docs/guide.md.
const (
	exitOK          = 0
	exitFailure     = 1   // the run (or a command) failed
	exitUsage       = 2   // bad flags or arguments, an invalid graph
	exitInterrupted = 130 // stopped by SIGINT (Ctrl-C) or SIGTERM: 128 + SIGINT, as shells report it
)

// usageError marks errors that are the caller's input, not a failed run.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// interruptedError marks a command stopped by a signal before it finished.
type interruptedError struct{ err error }

func (e interruptedError) Error() string { return e.err.Error() }
func (e interruptedError) Unwrap() error { return e.err }

// exitCode is the process's exit status for what a command returned.
func exitCode(err error) int {
	var ue usageError
	var ie interruptedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ie):
		return exitInterrupted
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitFailure
}

func main() {
	if v, ok := os.LookupEnv(pluginhost.BuiltinServerEnv); ok { // servebuiltin.go
		os.Exit(serveBuiltin(v))
	}
	root := newRootCmd()
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "flowrun:", err)
		os.Exit(exitCode(err))
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "flowrun",
		Short: "Train and serve recommendation models with pluggable embedding caches",
		Long: `flowrun runs training and inference pipelines for recommendation models whose
embedding tables are larger than fast memory. A pipeline is a YAML graph of
stages (load, plan, collect, exchange, insert, train, cast, filter, score)
joined by NATS subjects; cache policies, kernels, models and devices are
plugins, linked in (plugin: builtin:NAME) or run as separate processes
(plugin: ./path/to/binary).

  flowrun run graphs/demo.yaml --out results.json
  flowrun validate graphs/*.yaml
  flowrun plugins list

Exit codes:
  0    success
  1    the run (or another command) failed; the error names the stage,
       plugin or batch, and no results file is written
  2    usage error: bad flags or arguments, or an invalid graph
  130  interrupted (Ctrl-C, SIGINT or SIGTERM); no results file is written

A newcomer's guide: docs/guide.md; every graph key: docs/graph-reference.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(), newValidateCmd(), newPluginsCmd(), newVersionCmd())
	root.AddCommand(newGenCmd(), newConvertCmd())
	root.AddCommand(newBenchCmd(), newReportCmd(), newSearchCmd(), newReplayCmd())
	root.AddCommand(newWorkerCmd())
	root.AddCommand(newShardCmd())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	commandsOnly(root)
	return root
}

// commandsOnly makes a command that only groups subcommands print its help
// when called alone and refuse anything else as a usage error (exit 2):
// cobra would print the help and exit 0 for `flowrun plugins bogus`, and
// report `flowrun bogus` as a failure (exit 1).
func commandsOnly(cmd *cobra.Command) {
	cmd.Args = usageArgs(cobra.NoArgs)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

// usageArgs makes a wrong number of arguments a usage error (exit 2), like
// a bad flag.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
