package summary

import (
	"fmt"
	"io"

	"github.com/flowrun/flowrun/framework/results"
)

// writeShadows writes the shadow policies beside the serving cache, one
// table: what each would have hit and sent over the link on the run's own
// plan requests, the modeled time of that traffic (a what-if, not on the
// run's modeled clock) and the wall time its plans took.
func writeShadows(w io.Writer, r *results.Results) {
	if len(r.Shadows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nshadow policies (what-ifs on this run's plan requests; modeled link time not on the run's clock):")
	t := Table{Align: "llrrrrrrrr"}
	t.Row("", "policy", "rows/table", "hit rate", "misses", "evictions", "to device", "to host", "modeled link ms", "plan wall ms")
	if c := r.Cache; c != nil {
		t.Row("serving", c.Plugin, Thousands(float64(c.Rows)), fmt.Sprintf("%.2f%%", 100*c.HitRate),
			Thousands(float64(c.Misses)), Thousands(float64(c.Evictions)),
			BytesIEC(c.LinkBytes["to_device"]), BytesIEC(c.LinkBytes["to_host"]), "-", "-")
	}
	for _, s := range r.Shadows {
		t.Row(s.Stage, s.Plugin, Thousands(float64(s.Rows)), fmt.Sprintf("%.2f%%", 100*s.HitRate),
			Thousands(float64(s.Misses)), Thousands(float64(s.Evictions)),
			BytesIEC(s.LinkBytes["to_device"]), BytesIEC(s.LinkBytes["to_host"]),
			fmt.Sprintf("%.3f", s.ModeledLinkMs), fmt.Sprintf("%.1f", s.PlanWallMs))
	}
	t.Write(w, "  ")
	for i, s := range r.Shadows {
		if s.BehindBatches > 0 && (i == 0 || r.Shadows[i-1].Stage != s.Stage) {
			fmt.Fprintf(w, "  shadow stage %s was %d batches behind when the serving path ended; the run waited %.1f ms for it\n", s.Stage, s.BehindBatches, s.DrainMs)
		}
	}
	fmt.Fprintln(w)
}
