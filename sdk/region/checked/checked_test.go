package checked_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/checked"
)

// newRegion returns a 4 KiB region and a mapper, both closed when t ends.
func newRegion(t *testing.T) (*region.Region, *region.Mapper) {
	t.Helper()
	r, err := region.Create("checked", 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	m := &region.Mapper{}
	t.Cleanup(func() { m.Close() })
	return r, m
}

func TestViewsShareTheRegion(t *testing.T) {
	r, m := newRegion(t)
	ref := r.Ref()

	v, err := checked.Int64s(m, ref.Sub(64, 80), 3, "ids")
	if err != nil {
		t.Fatal(err)
	}
	v[2] = 42
	if got := region.Int64s(r.Bytes()[64:])[2]; len(v) != 3 || got != 42 {
		t.Fatalf("len %d, region reads %d: want 3 int64s over the region's bytes", len(v), got)
	}
	f, err := checked.Float32s(m, ref.Sub(4, 8), 2, "pooled")
	if err != nil || len(f) != 2 {
		t.Fatalf("float32s: %v, %d", err, len(f))
	}
	b, err := checked.Bytes(m, ref.Sub(3, 5), 5, "hits")
	if err != nil || len(b) != 5 {
		t.Fatalf("bytes: %v, %d", err, len(b))
	}
	// An empty shape needs no memory: any ref, the zero ref included.
	for _, ref := range []region.Ref{{}, ref.Sub(3, 0), {Region: region.Prefix + "0-0-gone"}} {
		if v, err := checked.Int64s(m, ref, 0, "ids"); err != nil || v != nil {
			t.Errorf("ref %v, 0 elements: %v, %v; want nil, nil", ref, v, err)
		}
	}
}

func TestRefusals(t *testing.T) {
	r, m := newRegion(t)
	ref := r.Ref()
	cases := []struct {
		name string
		ref  region.Ref
		n    int64
		want string
	}{
		{"NegativeLength", ref, -1, "negative length"},
		{"Overflow", ref, math.MaxInt64/8 + 1, "overflow"},
		{"MissingRef", region.Ref{}, 1, "missing ref"},
		{"ShortRef", ref.Sub(0, 15), 2, "has 15 bytes, need 16"},
		{"Unaligned", ref.Sub(4, 16), 2, "not aligned"},
		{"BeyondRegion", ref.Sub(4088, 16), 2, "out of region bounds"},
		{"NoSuchRegion", region.Ref{Region: region.Prefix + "0-0-gone", Length: 16}, 2, "not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checked.Int64s(m, tc.ref, tc.n, "ids")
			if !errors.Is(err, plugin.ErrInvalidRequest) || !strings.Contains(err.Error(), "ids: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want plugin.ErrInvalidRequest naming ids and saying %q", err, tc.want)
			}
		})
	}
}
