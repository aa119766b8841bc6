package cache_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// snapshotting is a mock policy that keeps a snapshot.
type snapshotting struct {
	cachetest.Mock
	snap []byte
}

func (s *snapshotting) Snapshot(context.Context) ([]byte, error) { return bytes.Clone(s.snap), nil }
func (s *snapshotting) Restore(_ context.Context, b []byte) error {
	if len(b) == 0 {
		return cache.ErrBadSnapshot
	}
	s.snap = bytes.Clone(b)
	return nil
}

// TestSnapshotOverGRPC: a snapshot of any size (a small one in the
// message, a 6 MiB one through a region) goes both ways unchanged; a bad
// one is refused; a policy that takes none answers plugin.ErrUnsupported.
func TestSnapshotOverGRPC(t *testing.T) {
	ctx := context.Background()
	impl := &snapshotting{snap: []byte("hit-map")}
	c := connect(t, impl)
	big := make([]byte, 6<<20)
	for i := range big {
		big[i] = byte(i * 13)
	}
	for _, want := range [][]byte{[]byte("small"), big} {
		if err := cache.RestoreOf(ctx, c, want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(impl.snap, want) {
			t.Fatalf("Restore of %d bytes arrived as %d bytes", len(want), len(impl.snap))
		}
		got, err := cache.SnapshotOf(ctx, c)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Snapshot of %d bytes came back as %d bytes, %v", len(want), len(got), err)
		}
	}
	if err := cache.RestoreOf(ctx, c, nil); err == nil {
		t.Fatal("an empty snapshot restored")
	}
	plain := connect(t, &cachetest.Mock{})
	if _, err := cache.SnapshotOf(ctx, plain); !errors.Is(err, plugin.ErrUnsupported) {
		t.Fatalf("Snapshot of a policy without one: %v, want ErrUnsupported", err)
	}
	if err := cache.RestoreOf(ctx, plain, []byte("x")); !errors.Is(err, plugin.ErrUnsupported) {
		t.Fatalf("Restore into a policy without one: %v, want ErrUnsupported", err)
	}
}
