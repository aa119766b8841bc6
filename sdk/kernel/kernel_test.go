package kernel

import (
	"strings"
	"testing"
)

// The names of optimizers and poolings read back to themselves, case
// aside; other names are refused; the state each optimizer keeps per row.
func TestParseNames(t *testing.T) {
	for _, opt := range []Optimizer{SGD, Adagrad, RowWiseAdagrad} {
		got, err := ParseOptimizer(opt.String())
		if err != nil || got != opt {
			t.Errorf("ParseOptimizer(%q) = %v, %v", opt.String(), got, err)
		}
	}
	if _, err := ParseOptimizer("adam"); err == nil {
		t.Error("ParseOptimizer(adam): no error")
	}
	if StateFloats(SGD, 8) != 0 || StateFloats(Adagrad, 8) != 8 || StateFloats(RowWiseAdagrad, 8) != 1 {
		t.Error("StateFloats")
	}
	for _, r := range []Reduce{Sum, Mean} {
		got, err := ParseReduce(strings.ToUpper(r.String()))
		if err != nil || got != r {
			t.Errorf("ParseReduce(%q) = %v, %v", r.String(), got, err)
		}
	}
	if _, err := ParseReduce("max"); err == nil || err.Error() != `must be sum or mean, got "max"` {
		t.Errorf("ParseReduce(max): %v", err)
	}
}
