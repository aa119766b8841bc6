package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// progress draws a one-line progress bar on a terminal and nothing
// elsewhere (logs and pipes get the summary only).
type progress struct {
	w       io.Writer
	mu      sync.Mutex
	start   time.Time
	last    time.Time
	enabled bool
}

func newProgress(w io.Writer, quiet bool) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, start: time.Now(), enabled: !quiet && ok && term.IsTerminal(int(f.Fd()))}
}

// update draws done/total, at most ten times a second.
func (p *progress) update(done, total int) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && done != total {
		return
	}
	p.last = now
	const width = 30
	frac := 0.0
	if total > 0 {
		frac = float64(done) / float64(total)
	}
	filled := int(frac * width)
	rate := float64(done) / now.Sub(p.start).Seconds()
	totalStr := "?"
	if total > 0 {
		totalStr = fmt.Sprint(total)
	}
	fmt.Fprintf(p.w, "\r[%s%s] %d/%s batches  %.1f batches/s ",
		strings.Repeat("=", filled), strings.Repeat(" ", width-filled), done, totalStr, rate)
}

// finish clears the bar.
func (p *progress) finish() {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 79))
}
