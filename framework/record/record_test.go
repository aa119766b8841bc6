package record

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/checkpoint"
)

// batchOf is a planned batch of n lookups with random IDs, hits, slots
// and victims.
func batchOf(rng *rand.Rand, seq uint64, n int) Batch {
	b := Batch{Seq: seq, Eval: seq%5 == 4, Planned: true, IDs: make([]int64, n), Hits: make([]uint8, n), Slots: make([]int64, n)}
	for i := range n {
		b.IDs[i] = rng.Int64N(1 << 40)
		b.Hits[i] = uint8(rng.IntN(2))
		b.Slots[i] = rng.Int64N(5000) - 1
	}
	for range rng.IntN(n) {
		b.Victims = append(b.Victims, rng.Int64N(8), rng.Int64N(1<<30), rng.Int64N(5000))
	}
	return b
}

func write(t *testing.T, window, batches int, lookups bool) (string, []Batch) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	w := NewWriter(window, lookups)
	var all []Batch
	for seq := range uint64(batches) {
		b := batchOf(rng, seq, 1+rng.IntN(300))
		if seq == 3 {
			b = Batch{Seq: seq, IDs: b.IDs} // a batch without a plan
		}
		all = append(all, b)
		if err := w.Batch(b); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	id := checkpoint.Identity{Graph: "g", GraphHash: "h", Seed: 1, ConfigDigest: "c"}
	if _, err := w.Write(dir, Manifest{Identity: id, Window: uint64(window), Digest: "d"}); err != nil {
		t.Fatal(err)
	}
	return dir, all
}

// TestRoundTripKeepsTheWindow writes 30 batches with a window of 12:
// the record holds the last 12, each decoded as it was handed in.
func TestRoundTripKeepsTheWindow(t *testing.T) {
	dir, all := write(t, 12, 30, true)
	rec, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.First != 18 || rec.Batches != 12 || rec.End() != 30 || rec.Has(17) || !rec.Has(29) {
		t.Fatalf("first %d, %d batches", rec.First, rec.Batches)
	}
	for seq := uint64(18); seq < 30; seq++ {
		got, err := rec.Batch(seq)
		if err != nil {
			t.Fatal(err)
		}
		want := all[seq]
		if want.Planned && len(want.Victims) == 0 {
			want.Victims = []int64{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("batch %d decoded differently", seq)
		}
		if d := Diff(want, got); d != "" {
			t.Fatalf("batch %d: %s", seq, d)
		}
	}
	if rec.StreamBytes <= 0 || rec.RawBytes <= rec.StreamBytes/2 {
		t.Errorf("stream %d bytes, raw %d", rec.StreamBytes, rec.RawBytes)
	}
}

// TestWithoutLookups: a record that omits the IDs keeps the plan, and a
// batch with the same plan and any lookups passes its check.
func TestWithoutLookups(t *testing.T) {
	dir, all := write(t, 10, 10, false)
	rec, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	full, _ := write(t, 10, 10, true)
	withIDs, err := Open(full)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Lookups || !withIDs.Lookups || rec.StreamBytes >= withIDs.StreamBytes {
		t.Fatalf("without lookups %d bytes, with %d", rec.StreamBytes, withIDs.StreamBytes)
	}
	v := NewVerifier(rec)
	for _, b := range all {
		got, err := rec.Batch(b.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if got.IDs != nil || !reflect.DeepEqual(got.Hits, b.Hits) || !reflect.DeepEqual(got.Slots, b.Slots) {
			t.Fatalf("batch %d decoded differently", b.Seq)
		}
		if err := v.Batch(b); err != nil {
			t.Fatal(err)
		}
	}
	b := all[7]
	b.Hits = append([]uint8(nil), b.Hits...)
	b.Hits[0] ^= 1
	if err := v.Batch(b); !errors.Is(err, ErrDiverged) {
		t.Fatalf("changed hit: %v", err)
	}
}

// TestTruncatedOrFlippedRefused cuts the stream and the manifest at
// every length and flips bytes: each is refused as corrupt.
func TestTruncatedOrFlippedRefused(t *testing.T) {
	dir, _ := write(t, 4, 6, true)
	for _, name := range []string{StreamName, ManifestName} {
		path := filepath.Join(dir, name)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		step := max(len(orig)/97, 1)
		for n := 0; n < len(orig); n += step {
			mustRefuse(t, dir, path, orig[:n], name+" truncated")
			flipped := append([]byte(nil), orig...)
			flipped[n] ^= 0x10
			mustRefuse(t, dir, path, flipped, name+" flipped")
		}
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(dir); err != nil {
		t.Fatalf("restored record refused: %v", err)
	}
}

func mustRefuse(t *testing.T, dir, path string, data []byte, what string) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s (%d bytes): %v, want ErrCorrupt", what, len(data), err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("%s: error is more than a line: %q", what, err)
	}
}

// TestBadFrameRefused: a stream whose sums are right but whose frames
// are not (a flipped byte under the frame's CRC-32C, a frame cut short)
// is refused, and a writer takes batches only in sequence.
func TestBadFrameRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w := NewWriter(10, true)
	if err := w.Batch(batchOf(rng, 5, 10)); err != nil {
		t.Fatal(err)
	}
	if err := w.Batch(batchOf(rng, 7, 10)); err == nil {
		t.Fatal("batch 7 after batch 5 accepted")
	}
	if _, err := w.Write(t.TempDir(), Manifest{Window: 10}); err != nil {
		t.Fatal(err)
	}
	good := w.frames[0]
	for _, bad := range [][]byte{
		append(append([]byte(nil), good[:len(good)-1]...), good[len(good)-1]^1),
		good[:len(good)-1],
	} {
		w.frames[0] = bad
		dir := t.TempDir()
		if _, err := w.Write(dir, Manifest{Window: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "frame 0") {
			t.Fatalf("bad frame: %v", err)
		}
	}
}

// TestVerifierNamesTheFirstDifference: a replayed batch that differs in
// its lookups or its plan is refused, naming the batch and the lookup.
func TestVerifierNamesTheFirstDifference(t *testing.T) {
	dir, all := write(t, 8, 8, true)
	rec, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(rec)
	for _, b := range all {
		if err := v.Batch(b); err != nil {
			t.Fatal(err)
		}
	}
	if v.Compared != 8 {
		t.Fatalf("compared %d", v.Compared)
	}
	b := all[5]
	b.Slots = append([]int64(nil), b.Slots...)
	b.Slots[2]++
	err = v.Batch(b)
	if !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), "batch 5: lookup 2") {
		t.Fatalf("changed slot: %v", err)
	}
	b = all[6]
	b.IDs = append([]int64(nil), b.IDs...)
	b.IDs[0]++
	if err := v.Batch(b); !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), "another stream") {
		t.Fatalf("changed ID: %v", err)
	}
}

// BenchmarkEncode encodes a batch of graphs/scratchpipe.yaml's shape
// (512 samples × 8 tables × 8 lookups) with a plan: the CPU a record
// costs a batch.
func BenchmarkEncode(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	bt := batchOf(rng, 0, 512*8*8)
	for i := range bt.IDs {
		bt.IDs[i] = rng.Int64N(500000)
	}
	var enc encoder
	b.SetBytes(int64(len(bt.IDs)) * 17)
	for b.Loop() {
		if _, err := encode(bt, true, &enc); err != nil {
			b.Fatal(err)
		}
	}
}
