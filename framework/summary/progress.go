package summary

import (
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Progress draws a progress bar (mpb) on a terminal and nothing elsewhere:
// logs, pipes, files and --quiet/--json runs get no control characters,
// only what the command prints at the end.
type Progress struct {
	w       io.Writer
	enabled bool

	mu   sync.Mutex
	p    *mpb.Progress
	bar  *mpb.Bar
	done int64
	// total is the bar's total; 0 while the runtime does not know it.
	total int64
	// finished: Finish ran, and a late update draws nothing.
	finished bool
}

// NewProgress returns a bar drawing on w when w is a terminal and quiet is
// false, and a no-op otherwise.
func NewProgress(w io.Writer, quiet bool) *Progress {
	f, ok := w.(*os.File)
	return &Progress{w: w, enabled: !quiet && ok && term.IsTerminal(int(f.Fd()))}
}

// Update takes the batches done so far and the total (0 while unknown):
// the runtime's progress callback. The runtime calls it from its stages'
// goroutines, and done may arrive out of order; the bar only moves
// forward.
func (p *Progress) Update(done, total int) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	if p.p == nil {
		// Bars are made on the first batch, not before the run, so a graph
		// that fails to start draws nothing.
		p.start(total)
	}
	if int64(total) != p.total && total > 0 {
		p.total = int64(total)
		p.bar.SetTotal(p.total, false)
	}
	if int64(done) > p.done {
		p.done = int64(done)
		p.bar.SetCurrent(p.done)
	}
}

// start makes the bar; p.mu is held.
func (p *Progress) start(total int) {
	p.p = mpb.New(mpb.WithOutput(p.w), mpb.WithWidth(72), mpb.WithAutoRefresh())
	p.bar = p.p.New(int64(total), mpb.BarStyle().Lbound("[").Filler("=").Tip(">").Padding(" ").Rbound("]"),
		mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(
			decor.Name("batches "),
			decor.Any(func(s decor.Statistics) string { return counts(s.Current, s.Total) }, decor.WCSyncWidth),
		),
		mpb.AppendDecorators(
			decor.AverageSpeed(0, " %.1f batches/s", decor.WCSyncWidth),
			decor.Name("  ETA "),
			decor.AverageETA(decor.ET_STYLE_GO),
		),
	)
	p.total = int64(total)
}

// Write prints b above the bar while one is drawn, and straight to the
// terminal otherwise, so that warnings logged during a run do not tear the
// bar apart. It is the writer of the run's logger and of plugins' output.
func (p *Progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	bars := p.p
	p.mu.Unlock()
	if bars != nil {
		if n, err := bars.Write(b); err == nil {
			return n, nil
		}
	}
	return p.w.Write(b)
}

// counts reads "done/total batches", with "?" for an unknown total.
func counts(done, total int64) string {
	if total <= 0 {
		return strconv.FormatInt(done, 10) + "/?"
	}
	return strconv.FormatInt(done, 10) + "/" + strconv.FormatInt(total, 10)
}

// Finish removes the bar from the terminal and waits until it is gone, so
// that what the command prints next starts on a clean line. A bar that did
// not reach its total (a failed or interrupted run, or a total the runtime
// never knew) is dropped the same way.
func (p *Progress) Finish() {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished = true
	if p.p == nil {
		return
	}
	p.bar.Abort(true)
	p.p.Wait()
	p.p, p.bar = nil, nil
}
