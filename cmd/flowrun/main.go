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
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the run (or a command) failed
	exitUsage   = 2 // bad flags or arguments, an invalid graph
)

// usageError marks errors that are the caller's input, not a failed run.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	root := newRootCmd()
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "flowrun:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(exitUsage)
		}
		os.Exit(exitFailure)
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
  flowrun plugins list`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(), newValidateCmd(), newPluginsCmd(), newVersionCmd())
	root.AddCommand(newGenCmd(), newConvertCmd())
	root.AddCommand(newBenchCmd())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	return root
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
