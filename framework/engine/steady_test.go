package engine

import (
	"testing"
	"time"
)

func TestSteadyWallMs(t *testing.T) {
	t0 := time.Unix(100, 0)
	for _, c := range []struct {
		first, last time.Time
		n           int
		want        float64
	}{
		{t0, t0, 0, 0},
		{t0, t0, 1, 0},
		{t0, t0.Add(30 * time.Millisecond), 4, 10},
		{t0, t0.Add(1500 * time.Microsecond), 2, 1.5},
	} {
		if got := steadyWallMs(c.first, c.last, c.n); got != c.want {
			t.Errorf("steadyWallMs(+%v, %d) = %v, want %v", c.last.Sub(c.first), c.n, got, c.want)
		}
	}
}
