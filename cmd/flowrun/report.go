package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/report"
)

func newReportCmd() *cobra.Command {
	var out, formats string
	cmd := &cobra.Command{
		Use:   "report FILE... --out DIR",
		Short: "Draw figures from results.json and bench JSON files",
		Long: `Draw the papers' figures from what runs left behind, as PNG and SVG files in
DIR:

  breakdown   time per batch of each stage, stacked, per run: wall (measured
              on this machine) beside modeled (the devices' cost models),
              with each run's iteration time marked (ScratchPipe Fig. 12)
  speedup     speedup over the first graph of a flowrun bench, modeled and
              wall, per sweep point (ScratchPipe Fig. 13)
  hitrate     cache hit rate against cache size, from a flowrun bench
              --sweep cache.size=... (ScratchPipe Fig. 6)
  accuracy    relative accuracy drop (Eq. 1) against the host tables' memory
              over FP32, mean over seeds, from a flowrun bench of
              low-precision tables (mixed-precision paper, Tables 2–5, 11)
  loss        training loss per batch of each run
  frontier    NDCG against modeled p99 of every design of a flowrun search,
              one colour per QPS, the Pareto frontier marked (RecPipe Fig. 7)

FILE is a results.json (flowrun run --out), the JSON of flowrun bench
(--json or --out) or that of flowrun search; a bench's runs count as runs
of their own. A figure is drawn only when its data is there.

  flowrun bench graphs/no-cache.yaml graphs/scratchpipe.yaml --out bench.json
  flowrun bench graphs/scratchpipe.yaml --sweep cache.size=0.05,0.1,0.2 --out sweep.json
  flowrun report bench.json sweep.json --out figures/`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{errors.New("--out DIR is required")}
			}
			exts, err := reportFormats(formats)
			if err != nil {
				return usageError{err}
			}
			in, err := report.Read(args)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			written, err := report.Draw(in, out, exts)
			for _, w := range written {
				fmt.Fprintln(cmd.OutOrStdout(), w)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the figures into `DIR` (created if missing)")
	cmd.Flags().StringVar(&formats, "format", "png,svg", "image formats, comma-separated: png, svg")
	return cmd
}

// reportFormats parses --format.
func reportFormats(s string) ([]string, error) {
	var exts []string
	for _, f := range strings.Split(s, ",") {
		switch f = strings.TrimSpace(strings.ToLower(f)); f {
		case "png", "svg":
			if !slices.Contains(exts, f) {
				exts = append(exts, f)
			}
		default:
			return nil, fmt.Errorf("--format: unknown format %q (png, svg)", f)
		}
	}
	return exts, nil
}
