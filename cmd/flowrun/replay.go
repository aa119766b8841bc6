package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/checkpoint"
	"github.com/flowrun/flowrun/framework/engine"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/record"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/summary"
)

type replayFlags struct {
	from    int64
	graph   string
	sets    []string
	hazards string
	out     string
	quiet   bool
	json    bool
}

func newReplayCmd() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay DIR",
		Short: "Re-run a recorded run from a batch, or plan its stream with another policy",
		Long: `Replay a record written by flowrun run --record DIR.

Without --set cache.…, replay re-runs the recorded graph (its file and
--set flags, kept in the record) from the record's checkpoint at or
before --from (batch 0 when there is none), checks every batch the record
holds against it — the same lookups and, from the serving policy, the
same hits, slots and victims — and ends with the recorded run's digest;
it fails (exit 1) at the first batch that differs, naming it.
--check-hazards runs the hazard checker on the replay.

With --set cache.plugin=… or cache.size=… (a what-if), nothing is
re-run: the recorded stream from --from on is planned by that policy
(cold at --from, with the graph's windows and the warm-up profile it asks
for) and its hit rate is printed beside the recorded policy's.

A record of another graph (--graph), seed or config (any other --set) is
refused with one line, exit 2, as is a record that is corrupt or cut
short.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return interruptible(cmd, func(ctx context.Context) error {
				return replay(ctx, args[0], f, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	cmd.Flags().Int64Var(&f.from, "from", -1, "replay from batch `N` (from the checkpoint at or before it; default: the first batch the record holds)")
	cmd.Flags().StringVar(&f.graph, "graph", "", "replay onto this graph `FILE` instead of the recorded one (refused unless it is the same graph)")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "`key=value`: cache.… keys plan the stream with another policy (a what-if); any other key must leave the config as recorded")
	cmd.Flags().StringVar(&f.hazards, "check-hazards", "off", "check ScratchPipe's RAW hazards on the replay: `strict` (the flag alone), dynamic or off")
	cmd.Flags().Lookup("check-hazards").NoOptDefVal = string(engine.HazardsStrict)
	cmd.Flags().StringVar(&f.out, "out", "", "write the replay's results as JSON to `FILE`")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only the replay's verdict")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the replay's results (or the what-if) as JSON")
	return cmd
}

// replay opens the record, checks it is of the graph and config it names
// (or --graph and --set), and replays it or plans it with another policy.
func replay(ctx context.Context, dir string, f replayFlags, stdout, stderr io.Writer) error {
	rec, err := record.Open(dir)
	if err != nil {
		return usageError{fmt.Errorf("replay: %w", err)}
	}
	path := rec.GraphFile
	if f.graph != "" {
		path = f.graph
	}
	var whatIf, others []string
	for _, s := range f.sets {
		if key, _, _ := strings.Cut(s, "="); key == "cache" || strings.HasPrefix(key, "cache.") {
			whatIf = append(whatIf, s)
		} else {
			others = append(others, s)
		}
	}
	sets := append(append([]string(nil), rec.Sets...), others...)
	g, err := validateGraph(path, sets, true)
	if err != nil {
		return err
	}
	id, err := engine.Identity(g)
	if err != nil {
		return err
	}
	if err := rec.Identity.Check(id); err != nil {
		return usageError{fmt.Errorf("replay: record %s: %w", dir, err)}
	}
	from := rec.First
	if f.from >= 0 {
		from = uint64(f.from)
	}
	if len(whatIf) > 0 {
		if f.hazards != "off" {
			return usageError{errors.New("replay: --check-hazards checks a re-run; a what-if (--set cache.…) re-runs nothing")}
		}
		return planWhatIf(ctx, rec, path, append(sets, whatIf...), from, f, stdout, stderr)
	}
	return rerun(ctx, rec, g, path, sets, from, f, stdout, stderr)
}

// rerun re-runs the recorded graph from the checkpoint at or before from,
// checking its batches against the record, and compares the digests.
func rerun(ctx context.Context, rec *record.Record, g *graph.Graph, path string, sets []string, from uint64, f replayFlags, stdout, stderr io.Writer) error {
	start, ck, err := checkpointAtOrBefore(rec.Dir, from)
	if err != nil {
		return usageError{fmt.Errorf("replay: %w", err)}
	}
	v := record.NewVerifier(rec)
	compared := "lookups and plan decisions"
	if b, err := rec.Batch(rec.First); rec.Batches > 0 && err == nil && !b.Planned {
		compared = "lookups; the graph plans none"
	}
	var ckDir string
	if ck != nil {
		ckDir = ck.Dir
		if strings.HasPrefix(ck.Notes["cache"], "cold") {
			v.LookupsOnly, compared = true, "lookups; plan decisions not compared, the policy takes no snapshot and restarts cold at the checkpoint"
		}
	}
	rf := runFlags{sets: sets, hazards: f.hazards, quiet: f.quiet || f.json, trace: "none", recorder: v}
	rf.ckpt.resume = ckDir
	res, err := runValidated(ctx, g, path, rf, stderr)
	if err != nil {
		return checkpointFailure(err, path, sets)
	}
	if f.out != "" {
		if err := res.Write(f.out); err != nil {
			return err
		}
	}
	switch {
	case f.json:
		if err := printResultsJSON(stdout, res); err != nil {
			return err
		}
	case !f.quiet:
		summary.Write(stdout, res)
	}
	w := stdout
	if f.json {
		w = stderr
	}
	fmt.Fprintf(w, "replay      from batch %d (asked %d) of %s: %d batches equal to the record (%s), %d before its window\n",
		start, from, rec.Dir, v.Compared, compared, v.Outside)
	return compareDigest(w, rec, res)
}

// compareDigest says whether the replay ended where the recorded run did.
func compareDigest(w io.Writer, rec *record.Record, res *results.Results) error {
	switch {
	case rec.Digest == "":
		fmt.Fprintf(w, "digest      %s (the recorded run failed: %s)\n", res.Digest, rec.Failed)
	case rec.Digest == res.Digest:
		fmt.Fprintf(w, "digest      %s, the recorded run's\n", res.Digest)
	default:
		return fmt.Errorf("replay ended with digest %s, the recorded run with %s", res.Digest, rec.Digest)
	}
	return nil
}

// checkpointAtOrBefore is the record's newest checkpoint at or before
// batch from, verified (batch 0 and nil when there is none: the run
// starts from the beginning, as its data are a function of the seed and
// the batch).
func checkpointAtOrBefore(dir string, from uint64) (uint64, *checkpoint.Checkpoint, error) {
	root := filepath.Join(dir, record.CheckpointsDir)
	listed, err := checkpoint.List(root)
	if err != nil {
		return 0, nil, err
	}
	found := ""
	for _, l := range listed {
		if l.Batch <= from {
			found = l.Dir
		}
	}
	if found != "" {
		ck, err := checkpoint.Open(found)
		if err != nil {
			return 0, nil, err
		}
		return ck.Batch, ck, nil
	}
	return 0, nil, nil
}

// planWhatIf plans the recorded stream with the policy the what-if sets
// make and prints its hit rate beside the recorded one.
func planWhatIf(ctx context.Context, rec *record.Record, path string, sets []string, from uint64, f replayFlags, stdout, stderr io.Writer) error {
	if rec.Batches == 0 {
		return usageError{fmt.Errorf("replay: the record in %s holds no batches", rec.Dir)}
	}
	g, err := validateGraph(path, sets, true)
	if err != nil {
		return err
	}
	host, err := newHost(nil, stderr, f.quiet)
	if err != nil {
		return err
	}
	defer host.Close()
	if err := pinPlugins(host, g.Config); err != nil {
		return usageError{err}
	}
	w, err := engine.PlanRecorded(ctx, engine.Options{Graph: g, Plugins: locatedOpener{host, g.Config}}, g.Config.Cache, rec, from)
	if err != nil {
		return openFailure(err, path, sets)
	}
	if f.json {
		data, err := json.MarshalIndent(w, "", "  ")
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(data, '\n'))
		return err
	}
	fmt.Fprintf(stdout, "what-if     batches %d…%d of %s, training lookups only; the what-if policy starts cold at batch %d\n", w.From, w.End-1, rec.Dir, w.From)
	fmt.Fprintf(stdout, "%-32s %8s %12s %12s %10s %10s\n", "policy", "size", "hits", "misses", "evictions", "hit rate")
	fmt.Fprintf(stdout, "%-32s %8s %12d %12d %10s %10.4f\n", rec.Policy+" (recorded)", "", w.RecordedHits, w.RecordedMisses, "", w.RecordedHitRate())
	fmt.Fprintf(stdout, "%-32s %8.4g %12d %12d %10d %10.4f\n", w.Plugin, w.Size, w.Hits, w.Misses, w.Evictions, w.HitRate())
	return nil
}
