package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/checkpoint"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// The cache's parts of a checkpoint: the policy's snapshot
// (cache.Snapshotter) and, with it, what Storage holds. A policy without
// a snapshot restarts cold: neither part is written, and the resumed run
// starts with the policy and Storage empty and every row in the host
// tables (the rows part has Storage's rows over the host's).
const (
	partCache   = "cache"
	partStorage = "storage"
)

// cacheParts are the cache's parts of a checkpoint, and a note saying how
// the cache resumes.
func (r *run) cacheParts(ctx context.Context) ([]checkpoint.Part, string, error) {
	const cold = "cold: the policy takes no snapshot (cache.Snapshotter); it and Storage restart empty on resume, every row in the host tables (the digest is unchanged; hits after the boundary differ)"
	if r.plugins.Cache == nil {
		return nil, "no cache", nil
	}
	snap, err := cache.SnapshotOf(ctx, r.plugins.Cache)
	if errors.Is(err, plugin.ErrUnsupported) {
		return nil, cold, nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("cache snapshot: %w", err)
	}
	parts := []checkpoint.Part{{Name: partCache, Write: writeBytes(snap)}}
	if r.storage != nil {
		slots := &storageSlots{s: r.storage}
		parts = append(parts, checkpoint.Part{Name: partStorage, Write: func(w io.Writer) error { return checkpoint.EncodeRows(w, slots) }})
	}
	return parts, "snapshot: the policy's snapshot and Storage's slots are restored on resume", nil
}

// restoreCache puts back the policy's snapshot and Storage's slots, when
// the checkpoint has them.
func (r *run) restoreCache(ctx context.Context, ck *checkpoint.Checkpoint) error {
	snap, ok := ck.Part(partCache)
	if !ok {
		return nil
	}
	if r.plugins.Cache == nil {
		return fmt.Errorf("%w: it has a cache snapshot, this run has no cache", checkpoint.ErrMismatch)
	}
	if err := cache.RestoreOf(ctx, r.plugins.Cache, snap); err != nil {
		return fmt.Errorf("cache restore: %w", err)
	}
	saved, ok := ck.Part(partStorage)
	if !ok || r.storage == nil {
		if ok != (r.storage != nil) {
			return fmt.Errorf("%w: Storage in the checkpoint and in this run differ", checkpoint.ErrMismatch)
		}
		return nil
	}
	return checkpoint.DecodeRows(saved, func(t, rowBytes int, _ uint64) error {
		if t >= r.storage.Len() || rowBytes != 8+4*r.storage.Stride {
			return fmt.Errorf("%w: Storage table %d's saved slots are %d bytes", checkpoint.ErrMismatch, t, rowBytes)
		}
		return nil
	}, func(t int, slot int64, raw []byte) error {
		return r.storage.RestoreSlot(t, slot, int64(binary.LittleEndian.Uint64(raw)), raw[8:])
	})
}

// storageSlots is Storage as a checkpoint.RowSource: each filled slot, by
// slot, as the row it holds (int64) followed by the slot's bytes.
type storageSlots struct {
	s   *batch.Storage
	buf []byte // RowData's, valid until its next call (checkpoint.RowSource)
}

func (ss *storageSlots) Tables() int      { return ss.s.Len() }
func (ss *storageSlots) RowBytes(int) int { return 8 + 4*ss.s.Stride }
func (ss *storageSlots) TouchedIDs(t int) []int64 {
	var slots []int64
	for slot := range ss.s.CapacityOf(t) {
		if ss.s.RowOf(t, slot) >= 0 {
			slots = append(slots, slot)
		}
	}
	return slots
}

func (ss *storageSlots) RowData(t int, slot int64) []byte {
	ss.buf = binary.LittleEndian.AppendUint64(ss.buf[:0], uint64(ss.s.RowOf(t, slot)))
	ss.buf = append(ss.buf, ss.s.SlotData(t, slot)...)
	return ss.buf
}
