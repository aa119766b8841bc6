package none

import (
	"context"
	"fmt"

	"github.com/flowrun/flowrun/sdk/cache/plankit"
)

// snapshotTag names the format of a no-cache snapshot: the table count
// alone, since the policy keeps no state between batches.
const snapshotTag = "none/1"

// Snapshot implements cache.Snapshotter.
func (p *policy) Snapshot(context.Context) ([]byte, error) {
	var out []byte
	err := p.Guard.Locked(func() error {
		w := plankit.NewSnapshotWriter(snapshotTag)
		w.Uint64(uint64(p.tables))
		out = w.Bytes()
		return nil
	})
	return out, err
}

// Restore implements cache.Snapshotter.
func (p *policy) Restore(_ context.Context, snapshot []byte) error {
	return p.Guard.Locked(func() error {
		r, err := plankit.NewSnapshotReader(snapshot, snapshotTag)
		if err != nil {
			return err
		}
		if n := r.Uint64("tables"); n != uint64(p.tables) && r.Close() == nil {
			return fmt.Errorf("none snapshot: %d tables, the policy has %d", n, p.tables)
		}
		return r.Close()
	})
}
