package summary

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Ms formats milliseconds with three significant decimals for small values.
func Ms(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%s ms", Thousands(v))
	case v >= 100:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.3f ms", v)
	}
}

// Thousands rounds v and groups its digits by three: 11457444 → 11,457,444.
func Thousands(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	if v < 0 && s != "0" {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// BytesIEC formats a byte count in binary units: 61681664 → 58.8 MiB.
func BytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), 0
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i-1])
}

// Table lays out rows in columns two spaces apart. Unlike text/tabwriter
// it aligns text left and numbers right in the same table, and leaves no
// trailing blanks.
type Table struct {
	// Align has one letter per column, 'l' or 'r'; columns past its end
	// are aligned left.
	Align string
	rows  [][]string
}

// Row adds a row.
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, cells) }

// Write prints the table; every line but the first starts with indent.
func (t *Table) Write(w io.Writer, indent string) {
	var width []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for n, r := range t.rows {
		var b strings.Builder
		if n > 0 {
			b.WriteString(indent)
		}
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(t.Align) && t.Align[i] == 'r' {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
