package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/summary"
)

func newGenCmd() *cobra.Command {
	var (
		sets  []string
		out   string
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "gen GRAPH --out FILE",
		Short: "Write a graph's synthetic dataset to a batch file",
		Long: `Write the batches a graph's synthetic dataset makes (dataset.batches training
batches, then dataset.eval_batches held-out ones, from the graph's seed and
locality) to a batch file (.frb) that a graph reads with dataset.kind: file.
Run from that file, the graph trains on exactly the batches it would have
generated, and ends with the same model digest.

  flowrun gen graphs/demo.yaml --out demo.frb --set dataset.locality=high
  flowrun run graphs/demo.yaml --set dataset.kind=file --set dataset.path=demo.frb

Every key of the graph can be overridden with --set, as for run.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{errors.New("gen needs --out FILE")}
			}
			cfg, _, err := config.Load(args[0], sets)
			if err != nil {
				return usageError{err}
			}
			d := cfg.Dataset
			if d.Kind != "synthetic" {
				return usageError{fmt.Errorf("%s: dataset.kind is %s, and gen writes synthetic data (add --set dataset.kind=synthetic --set dataset.path=)", args[0], d.Kind)}
			}
			bar := summary.NewProgress(cmd.ErrOrStderr(), quiet)
			h, err := data.WriteSynthetic(out, cfg.Seed, d, bar.Update)
			bar.Finish()
			if err != nil {
				return err
			}
			if !quiet {
				printBatchFile(cmd.OutOrStdout(), out, h)
				fmt.Fprintf(cmd.OutOrStdout(), "batches    %d training then %d held-out, of %d samples; seed %d, locality %s\n",
					d.Batches, d.EvalBatches, d.BatchSize, cfg.Seed, d.Locality)
				fmt.Fprintf(cmd.OutOrStdout(), "train on it: flowrun run %s --set dataset.kind=file --set dataset.path=%s\n", args[0], out)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the batch file to `FILE` (required)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a graph key, `key=value` (repeatable)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing but errors")
	return cmd
}
