package main

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/flowrun/flowrun/framework/data"
	"github.com/flowrun/flowrun/framework/summary"
)

// convertFormats are the input formats of flowrun convert.
var convertFormats = map[string]func(io.Reader, string, string, data.ConvertOptions) (*data.Header, error){
	"criteo":    data.ConvertCriteo,
	"movielens": data.ConvertMovieLens,
}

func newConvertCmd() *cobra.Command {
	var (
		format string
		out    string
		opt    data.ConvertOptions
		quiet  bool
	)
	cmd := &cobra.Command{
		Use:   "convert --format criteo|movielens IN --out FILE",
		Short: "Convert a Criteo or MovieLens dataset to a batch file",
		Long: `Convert a dataset to a batch file (.frb) that a graph reads with
dataset.kind: file. IN is a file, a .gz file, or - for standard input.

criteo     Criteo Kaggle TSV (train.txt): label, 13 integer and 26 hex
           categorical features. Preprocessed as the DLRM reference does:
           missing → 0, negative integers → 0, dense = log(x+1); each
           categorical value hashed to its table as value mod --rows
           (default 100000), or, with --categorify, numbered densely per
           field in order of first occurrence (each table as large as its
           field has values; --min-count N sends values seen fewer than N
           times to a shared row 0). 26 tables, 1 lookup, 13 dense
           features; samples in file (time) order.
movielens  MovieLens ratings (ratings.csv userId,movieId,rating,timestamp;
           ratings.dat with ::; u.data with tabs). Tables user and movie,
           numbered densely (folded mod --rows if there are more); label =
           rating ≥ 4; dense = log(1 + the user's and the movie's earlier
           ratings); samples in time order.

The file's last eval_batches·batch_size samples are a graph's held-out
batches. A malformed line stops the conversion with FILE:LINE and what is
wrong, and leaves no output file.

  flowrun convert --format criteo train.txt --out criteo.frb --rows 1000000
  flowrun convert --format criteo train.txt --out kaggle.frb --categorify --min-count 2
  flowrun convert --format movielens ml-25m/ratings.csv --out ml.frb`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			conv, ok := convertFormats[format]
			switch {
			case format == "":
				return usageError{errors.New("convert needs --format criteo or --format movielens")}
			case !ok:
				return usageError{fmt.Errorf("unknown --format %q (allowed: criteo, movielens)", format)}
			case out == "":
				return usageError{errors.New("convert needs --out FILE")}
			case opt.Rows < 0:
				return usageError{fmt.Errorf("--rows must be ≥ 1, got %d", opt.Rows)}
			}
			switch {
			case (opt.Categorify || opt.MinCount > 0) && format != "criteo":
				return usageError{errors.New("--categorify and --min-count are for --format criteo")}
			case opt.MinCount > 0 && !opt.Categorify:
				return usageError{errors.New("--min-count needs --categorify")}
			case opt.MinCount > 1 && args[0] == "-":
				return usageError{errors.New("--min-count reads the input twice (counts, then rows): give a file, not -")}
			}
			if opt.MinCount > 1 {
				if _, err := readInput(cmd, args[0], quiet, func(r io.Reader, name string) (err error) {
					opt.Counts, err = data.CountCriteo(r, name, opt.Limit)
					return err
				}); err != nil {
					return err
				}
			}
			var h *data.Header
			if _, err := readInput(cmd, args[0], quiet, func(r io.Reader, name string) (err error) {
				h, err = conv(r, name, out, opt)
				return err
			}); err != nil {
				return err
			}
			if !quiet {
				printBatchFile(cmd.OutOrStdout(), out, h)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "input `FORMAT`, criteo or movielens (required, no default)")
	cmd.Flags().StringVar(&out, "out", "", "write the batch file to `FILE` (required)")
	cmd.Flags().Int64Var(&opt.Rows, "rows", 0, "`N` rows per table: the hash modulus of criteo (default 100000), a cap for movielens (default: as many as users and movies)")
	cmd.Flags().Uint64Var(&opt.Limit, "limit", 0, "convert at most `N` samples (0: all)")
	cmd.Flags().BoolVar(&opt.Categorify, "categorify", false, "criteo: number each field's values densely in order of first occurrence (a table per field of its own size) instead of value mod --rows")
	cmd.Flags().Uint64Var(&opt.MinCount, "min-count", 0, "criteo with --categorify: values seen fewer than `N` times share row 0 (reads the input twice)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing but errors")
	return cmd
}

// readInput opens IN (a file, .gz, or - for stdin), hands it to read with
// a progress bar, and closes it.
func readInput(cmd *cobra.Command, path string, quiet bool, read func(io.Reader, string) error) (string, error) {
	in, name, size, closeIn, err := openInput(path, cmd.InOrStdin())
	if err != nil {
		return "", err
	}
	defer closeIn()
	bar := newByteProgress(cmd.ErrOrStderr(), size, quiet)
	defer bar.finish()
	r := io.Reader(&countingReader{r: in, add: bar.add})
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return name, fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		r = zr
	}
	return name, read(r, name)
}

// openInput opens IN ("-" is stdin) and returns its name for messages
// and its size (0 when unknown).
func openInput(path string, stdin io.Reader) (io.Reader, string, int64, func(), error) {
	if path == "-" {
		return stdin, "stdin", 0, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", 0, nil, err
	}
	var size int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return f, path, size, func() { f.Close() }, nil
}

// printBatchFile says what a batch file holds and the dataset section a
// graph needs to read it.
func printBatchFile(w io.Writer, path string, h *data.Header) {
	var size string
	if st, err := os.Stat(path); err == nil {
		size = ", " + summary.BytesIEC(st.Size())
	}
	fmt.Fprintf(w, "wrote      %s: %d %s samples, %d tables × %d lookups, %d dense features%s\n",
		path, h.Samples, h.Source, h.Tables, h.Lookups, h.Dense, size)
	rows := fmt.Sprintf("rows: %d", h.MaxRows())
	if slices.Min(h.Rows) != h.MaxRows() {
		rows = fmt.Sprintf("table_rows: %s", strings.Join(strings.Fields(fmt.Sprint(h.Rows)), ", "))
	}
	fmt.Fprintf(w, "dataset    kind: file, path: %s, tables: %d, lookups: %d, dense_features: %d, %s\n",
		path, h.Tables, h.Lookups, h.Dense, rows)
}

// countingReader reports the bytes read through it.
type countingReader struct {
	r   io.Reader
	add func(int)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.add(n)
	return n, err
}

// byteProgress draws bytes read of the input on a terminal, at most ten
// times a second, and nothing elsewhere.
type byteProgress struct {
	w       io.Writer
	total   int64
	mu      sync.Mutex
	done    int64
	start   time.Time
	last    time.Time
	enabled bool
}

func newByteProgress(w io.Writer, total int64, quiet bool) *byteProgress {
	f, ok := w.(*os.File)
	return &byteProgress{w: w, total: total, start: time.Now(),
		enabled: !quiet && ok && term.IsTerminal(int(f.Fd()))}
}

func (p *byteProgress) add(n int) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += int64(n)
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	rate := summary.BytesIEC(int64(float64(p.done)/now.Sub(p.start).Seconds())) + "/s"
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\rread %s  %s ", summary.BytesIEC(p.done), rate)
		return
	}
	const width = 30
	filled := min(width, int(float64(p.done)/float64(p.total)*width))
	fmt.Fprintf(p.w, "\r[%s%s] %s of %s  %s ", strings.Repeat("=", filled), strings.Repeat(" ", width-filled),
		summary.BytesIEC(p.done), summary.BytesIEC(p.total), rate)
}

func (p *byteProgress) finish() {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 79))
}
