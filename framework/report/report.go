// Package report draws the papers' figures from what runs left behind:
// results.json files and the JSON of `flowrun bench` (bench.Comparison).
// Read gathers the runs and comparisons of the input files, labelled so
// that each run is told apart; Draw writes every figure their data allows
// as PNG or SVG files: the per-stage breakdown on both clocks (ScratchPipe
// Fig. 12), the speedup over a comparison's baseline (Fig. 13), the hit
// rate against a swept cache size (Fig. 6), every shadow policy's hit
// rate and modeled link time against cache size, the accuracy and AUC drop
// against the host tables' memory (the mixed-precision paper's Tables
// 2–5 against Table 11), the training loss, and the quality–p99 frontier
// of a design-space search (flowrun search, RecPipe Fig. 7).
//
// Modeled figures are labelled modeled (DESIGN.md §2.2). The package reads
// data only: it imports framework/results, framework/bench and
// framework/search (for their types), not the runtime, a stage or a
// plugin.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowrun/flowrun/framework/bench"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/search"
)

// Run is one run a figure shows.
type Run struct {
	Label string
	Res   *results.Results
	// File is the input the run came from, to tell apart runs of one
	// graph from different files.
	File string
}

// Input is everything the files given to report hold: every run (a
// comparison's runs count as runs of their own) and every comparison.
type Input struct {
	Runs    []Run
	Benches []*bench.Comparison
	// Searches are design-space searches (flowrun search --json/--out).
	Searches []*search.Result
}

// ErrNothingToDraw is Draw's answer when no figure has its data in the
// input.
var ErrNothingToDraw = errors.New("nothing to draw: no stage figures, bench comparison, sweep or loss curve in the files")

// readJSON decodes the JSON file at path into v.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Read reads results.json files and bench comparisons (told apart by
// their kind) and labels their runs.
func Read(paths []string) (*Input, error) {
	in := &Input{}
	for _, path := range paths {
		if err := in.read(path); err != nil {
			return nil, err
		}
	}
	in.label(len(paths) > 1)
	return in, nil
}

// read adds the runs (and comparison) of the file at path.
func (in *Input) read(path string) error {
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := readJSON(path, &probe); err != nil {
		return err
	}
	if probe.Kind == search.Kind {
		return in.readSearch(path)
	}
	if probe.Kind == bench.Kind {
		var b bench.Comparison
		if err := readJSON(path, &b); err != nil {
			return err
		}
		in.Benches = append(in.Benches, &b)
		for _, r := range b.Runs {
			if r.Results != nil {
				in.Runs = append(in.Runs, Run{Label: strings.TrimSpace(r.Graph + " " + shortPoint(r.Point)), Res: r.Results, File: path})
			}
		}
		return nil
	}
	res, err := results.Read(path)
	if err != nil {
		return err
	}
	if res.Graph == "" || res.Stages == nil {
		return fmt.Errorf("%s: neither a results.json nor the JSON of flowrun bench", path)
	}
	in.Runs = append(in.Runs, Run{Label: res.Graph, Res: res, File: path})
	return nil
}

// label makes the runs' labels unique. With several files, a run without
// a sweep point says which file it is from; runs that still share a label
// get their file, unless they have it already, then their position.
func (in *Input) label(severalFiles bool) {
	withFile := func(r Run) string { return fmt.Sprintf("%s (%s)", r.Label, fileStem(r.File)) }
	if severalFiles {
		for i, r := range in.Runs {
			if !strings.Contains(r.Label, "=") {
				in.Runs[i].Label = withFile(r)
			}
		}
	}
	for _, tag := range []func(r Run, n int) string{
		func(r Run, _ int) string {
			if strings.HasSuffix(r.Label, " ("+fileStem(r.File)+")") {
				return r.Label
			}
			return withFile(r)
		},
		func(r Run, n int) string { return fmt.Sprintf("%s #%d", r.Label, n) },
	} {
		count := map[string]int{}
		for _, r := range in.Runs {
			count[r.Label]++
		}
		seen := map[string]int{}
		for i, r := range in.Runs {
			if count[r.Label] > 1 {
				seen[r.Label]++
				in.Runs[i].Label = tag(r, seen[r.Label])
			}
		}
	}
}

// fileStem is a file's base name without its extension: a report's label
// for an input file.
func fileStem(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// shortPoint writes a sweep point compactly: "cache.size=0.05" → "size=0.05".
func shortPoint(pt []string) string {
	parts := make([]string, len(pt))
	for i, kv := range pt {
		k, v, _ := strings.Cut(kv, "=")
		if j := strings.LastIndexByte(k, '.'); j >= 0 {
			k = k[j+1:]
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, " ")
}

// Draw writes every figure in has data for into dir (which must exist),
// once per format in exts ("png", "svg"), and returns the paths written,
// in order: breakdown, speedup (speedup-2, ... for further comparisons),
// hitrate, shadows, accuracy, the search frontiers, loss. With no figure to draw it returns ErrNothingToDraw.
func Draw(in *Input, dir string, exts []string) ([]string, error) {
	figs := in.figures()
	if len(figs) == 0 {
		return nil, ErrNothingToDraw
	}
	var written []string
	for _, f := range figs {
		for _, ext := range exts {
			path := filepath.Join(dir, f.name+"."+ext)
			if err := f.save(path, ext); err != nil {
				return written, fmt.Errorf("%s: %w", path, err)
			}
			written = append(written, path)
		}
	}
	return written, nil
}

// figures are the figures in has data for.
func (in *Input) figures() []figure {
	var figs []figure
	if f, ok := breakdownFigure(in.Runs); ok {
		figs = append(figs, f)
	}
	n := 0
	for _, b := range in.Benches {
		name := "speedup"
		if n > 0 {
			name = fmt.Sprintf("speedup-%d", n+1)
		}
		if f, ok := speedupFigure(b, name); ok {
			figs = append(figs, f)
			n++
		}
	}
	if f, ok := hitRateFigure(in.Benches); ok {
		figs = append(figs, f)
	}
	if f, ok := shadowFigure(in); ok {
		figs = append(figs, f)
	}
	if f, ok := accuracyFigure(in.Benches); ok {
		figs = append(figs, f)
	}
	figs = append(figs, searchFigures(in.Searches)...)
	if f, ok := lossFigure(in.Runs); ok {
		figs = append(figs, f)
	}
	return figs
}
