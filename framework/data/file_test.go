package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
)

// writeSynthetic writes the batches a run of d would load (training, then
// held-out) to a batch file, as flowrun gen does.
func writeSynthetic(t *testing.T, seed uint64, d config.Dataset) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "syn.frb")
	if _, err := WriteSynthetic(path, seed, d, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// A file written from the synthetic generator gives back, batch for batch,
// what the generator makes: training batches from the front, held-out
// ones from the back, in any order.
func TestFileRoundTripsSyntheticBatches(t *testing.T) {
	d := dataset("high")
	d.Batches, d.EvalBatches = 5, 2
	syn, err := NewSynthetic(9, d)
	if err != nil {
		t.Fatal(err)
	}
	path := writeSynthetic(t, 9, d)
	f, err := Open(path, d)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if h := f.Header(); h.Samples != 7*uint64(d.BatchSize) || h.Source != "synthetic" || h.Seed != 9 {
		t.Fatalf("header %+v", h)
	}
	for _, seq := range []uint64{4, 0, 6, 2, 5, 1, 3} {
		eval := seq >= uint64(d.Batches)
		want, got := NewArrays(d), NewArrays(d)
		if err := syn.Fill(seq, eval, want); err != nil {
			t.Fatal(err)
		}
		if err := f.Fill(seq, eval, got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(want.IDs, got.IDs) || !slices.Equal(want.Offsets, got.Offsets) ||
			!slices.Equal(want.Dense, got.Dense) || !slices.Equal(want.Labels, got.Labels) {
			t.Errorf("batch %d (eval %v) differs from the generator's", seq, eval)
		}
	}
}

// More training batches than the file holds go around it again; the
// held-out tail is never among them.
func TestFileEpochsSkipTheHeldOutTail(t *testing.T) {
	d := dataset("uniform")
	d.Batches, d.EvalBatches = 3, 1
	path := writeSynthetic(t, 1, d)
	run := d
	run.Batches = 7
	f, err := Open(path, run)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.TrainBatches() != 3 {
		t.Fatalf("TrainBatches = %d, want 3", f.TrainBatches())
	}
	a, b := NewArrays(d), NewArrays(d)
	if err := f.Fill(1, false, a); err != nil {
		t.Fatal(err)
	}
	if err := f.Fill(4, false, b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.IDs, b.IDs) {
		t.Error("batch 4 is not batch 1 again")
	}
	if err := f.Fill(7, true, b); err != nil {
		t.Fatal(err)
	}
	syn, err := NewSynthetic(1, d)
	if err != nil {
		t.Fatal(err)
	}
	want := NewArrays(d)
	if err := syn.Fill(3, true, want); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(want.IDs, b.IDs) {
		t.Error("held-out batch 7 of the longer run is not the file's last batch")
	}
	if err := f.Fill(8, true, b); err == nil {
		t.Error("a held-out batch past eval_batches was read")
	}
}

func TestOpenReportsEveryShapeMismatchAtItsKey(t *testing.T) {
	d := dataset("uniform")
	path := writeSynthetic(t, 1, d)
	other := d
	other.Tables, other.Lookups, other.DenseFeatures, other.Rows = 2, 5, 1, 10
	other.EvalBatches, other.BatchSize = 100, 64
	_, err := Open(path, other)
	if err == nil {
		t.Fatal("Open accepted a dataset of another shape")
	}
	for _, want := range []string{"dataset::tables: the file", "has 3 tables, the graph 2", "dataset::lookups:", "dataset::dense_features:",
		"dataset::rows:", "dataset::eval_batches:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// Damaged files are errors that name the file and the byte offset, never
// panics.
func TestOpenRejectsDamagedFiles(t *testing.T) {
	d := dataset("uniform")
	good, err := os.ReadFile(writeSynthetic(t, 1, d))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	cases := map[string]struct {
		damage func([]byte) []byte
		want   string
	}{
		"empty":          {func(b []byte) []byte { return nil }, "offset 0: header truncated"},
		"not a batch":    {func(b []byte) []byte { return []byte("label\tI1\tI2\n1\t2\t3\n" + strings.Repeat("x", 100)) }, "not a flowrun batch file"},
		"version":        {func(b []byte) []byte { le.PutUint32(b[8:], 9); return b }, "offset 8: version 9, this flowrun reads versions 1 and 2 (re-convert"},
		"header padding": {func(b []byte) []byte { b[120] = 7; return b }, "offset 120: header padding"},
		"tables":         {func(b []byte) []byte { le.PutUint32(b[16:], 1<<30); return b }, "offset 16: tables"},
		"header bit rot": {func(b []byte) []byte { b[70] ^= 1; return b }, "checksum"},
		"truncated":      {func(b []byte) []byte { return b[:len(b)-10] }, "truncated"},
		"trailing bytes": {func(b []byte) []byte { return append(b, 0) }, "1 bytes past"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.frb")
			if err := os.WriteFile(path, c.damage(slices.Clone(good)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path, d)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want it to name %s and say %q", err, path, c.want)
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.frb"), d); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// A record whose values a model cannot take is an error at its offset
// when its batch is read.
func TestFillRejectsBadRecords(t *testing.T) {
	d := dataset("uniform")
	path := writeSynthetic(t, 1, d)
	h, err := ReadHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := int64(h.RecordSize())
	hlen := int64(h.headerLen())
	for name, c := range map[string]struct {
		at   int64 // within sample 1 of batch 0
		val  uint32
		want string
	}{
		"label": {0, 0x40000000, "label 2 is not in [0, 1]"},
		"dense": {4, 0x7fc00000, "dense feature 0 is NaN"},
		"id":    {4 + 4*int64(d.DenseFeatures), 5000, "table 0 ID 5000 is not below the table's 1000 rows"},
	} {
		t.Run(name, func(t *testing.T) {
			b, _ := os.ReadFile(path)
			off := hlen + rec + c.at
			binary.LittleEndian.PutUint32(b[off:], c.val)
			reseal(b, h, 1) // a writer's bug, not bit rot: the checksum agrees
			bad := filepath.Join(t.TempDir(), "bad.frb")
			os.WriteFile(bad, b, 0o644)
			f, err := Open(bad, d)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			err = f.Fill(0, false, NewArrays(d))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), bad) ||
				!strings.Contains(err.Error(), "offset "+strconv.FormatInt(off, 10)) {
				t.Fatalf("err = %v, want %s, offset %d and %q", err, bad, off, c.want)
			}
		})
	}
}

// FuzzBatchFile: no file makes Open or Fill panic; what they refuse they
// refuse with an error naming the file.
func FuzzBatchFile(f *testing.F) {
	d := config.Dataset{Kind: "synthetic", Batches: 2, BatchSize: 4, Tables: 2, Rows: 50, Dim: 4, Lookups: 2,
		Locality: "high", DenseFeatures: 1, EvalBatches: 1}
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.frb")
	if _, err := WriteSynthetic(path, 1, d, nil); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:100])
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "f.frb")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := ReadHeader(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if h.Tables*h.Lookups > 1<<12 || h.Dense > 1<<12 {
			return // a valid but large shape: not worth the arrays here
		}
		d := config.Dataset{Batches: 2, BatchSize: 2, Tables: h.Tables, Rows: h.MaxRows(), Lookups: h.Lookups,
			DenseFeatures: h.Dense, EvalBatches: 1}
		fl, err := Open(path, d)
		if err != nil {
			return
		}
		defer fl.Close()
		for seq := uint64(0); seq < 3; seq++ {
			if err := fl.Fill(seq, seq == 2, NewArrays(d)); err != nil && !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
		}
	})
}

// OpenSource gives the generator for a synthetic dataset and the checked
// batch file for a file one; both give the same batch, and done releases
// the file.
func TestOpenSource(t *testing.T) {
	d := dataset("low")
	d.Batches, d.EvalBatches = 3, 1
	syn, done, err := OpenSource(4, d)
	if err != nil || done() != nil {
		t.Fatal(err)
	}
	if _, ok := syn.(*Synthetic); !ok {
		t.Fatalf("synthetic dataset: source %T", syn)
	}
	fd := d
	fd.Kind, fd.Path = "file", writeSynthetic(t, 4, d)
	file, done, err := OpenSource(4, fd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := file.(*File); !ok {
		t.Fatalf("file dataset: source %T", file)
	}
	a, b := NewArrays(d), NewArrays(d)
	if err := syn.Fill(2, false, a); err != nil {
		t.Fatal(err)
	}
	if err := file.Fill(2, false, b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.IDs, b.IDs) || !slices.Equal(a.Labels, b.Labels) {
		t.Error("the file's batch 2 is not the generator's")
	}
	if err := done(); err != nil {
		t.Fatal(err)
	}
	if err := file.Fill(2, false, b); err == nil {
		t.Error("the file still reads after done")
	}
	fd.Path = filepath.Join(t.TempDir(), "missing.frb")
	if _, _, err := OpenSource(4, fd); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// reseal recomputes record i's checksum in the file image b.
func reseal(b []byte, h *Header, i int64) {
	rec := int64(h.RecordSize())
	at := int64(h.headerLen()) + i*rec
	r := b[at : at+rec]
	binary.LittleEndian.PutUint32(r[rec-4:], recordSum(uint64(i), r[:rec-4]))
}

// tinyDataset is small enough to damage every byte of its file in turn.
func tinyDataset() config.Dataset {
	return config.Dataset{Kind: "synthetic", Batches: 2, BatchSize: 4, Tables: 2, Rows: 50, Dim: 4, Lookups: 2,
		Locality: "high", DenseFeatures: 1, EvalBatches: 1}
}

// readAll opens the batch file at path and reads every batch of d.
func readAll(path string, d config.Dataset) error {
	f, err := Open(path, d)
	if err != nil {
		return err
	}
	defer f.Close()
	for seq := uint64(0); seq < uint64(d.Batches+d.EvalBatches); seq++ {
		if err := f.Fill(seq, seq >= uint64(d.Batches), NewArrays(d)); err != nil {
			return err
		}
	}
	return nil
}

// Every byte of a batch file is checked: whichever byte is flipped, Open
// or the read of its batch fails, and a flipped record byte is reported
// with the file, the record and the record's offset.
func TestEveryFlippedByteIsFound(t *testing.T) {
	d := tinyDataset()
	good, err := os.ReadFile(writeSynthetic(t, 1, d))
	if err != nil {
		t.Fatal(err)
	}
	h, err := ReadHeader(writeSynthetic(t, 1, d))
	if err != nil {
		t.Fatal(err)
	}
	hlen, rec := int64(h.headerLen()), int64(h.RecordSize())
	path := filepath.Join(t.TempDir(), "flip.frb")
	for i := range good {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			b := slices.Clone(good)
			b[i] ^= mask
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			err := readAll(path, d)
			if err == nil {
				t.Fatalf("byte %d ^ %#x: read without an error", i, mask)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("byte %d: error %q does not name the file", i, err)
			}
			if int64(i) < hlen {
				continue
			}
			r := (int64(i) - hlen) / rec
			want := fmt.Sprintf("offset %d: record %d is corrupt", hlen+r*rec, r)
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("byte %d (record %d): error %q, want %q", i, r, err, want)
			}
		}
	}
}

// A record copied over another (a misplaced block) is found too: the
// checksum covers the record's index.
func TestMovedRecordIsFound(t *testing.T) {
	d := tinyDataset()
	path := writeSynthetic(t, 1, d)
	b, _ := os.ReadFile(path)
	h, _ := ReadHeader(path)
	hlen, rec := int64(h.headerLen()), int64(h.RecordSize())
	copy(b[hlen+2*rec:hlen+3*rec], b[hlen:hlen+rec])
	os.WriteFile(path, b, 0o644)
	if err := readAll(path, d); err == nil || !strings.Contains(err.Error(), "record 2 is corrupt") {
		t.Fatalf("record 0 copied over record 2: %v", err)
	}
}

// A version 1 file (records without checksums) is still read, and gives
// the same batches as the version 2 file with the same samples.
func TestVersion1FileIsRead(t *testing.T) {
	d := tinyDataset()
	path := writeSynthetic(t, 1, d)
	h, err := ReadHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := os.ReadFile(path)
	hlen, rec := int64(h.headerLen()), int64(h.RecordSize())
	old := *h
	old.Version = 1
	v1 := old.marshal()
	for i := int64(0); i < int64(h.Samples); i++ {
		v1 = append(v1, v2[hlen+i*rec:hlen+(i+1)*rec-4]...)
	}
	p1 := filepath.Join(t.TempDir(), "v1.frb")
	os.WriteFile(p1, v1, 0o644)
	f1, err := Open(p1, d)
	if err != nil {
		t.Fatalf("version 1: %v", err)
	}
	defer f1.Close()
	f2, err := Open(path, d)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	for seq := uint64(0); seq < 3; seq++ {
		a, b := NewArrays(d), NewArrays(d)
		if err := f1.Fill(seq, seq == 2, a); err != nil {
			t.Fatal(err)
		}
		if err := f2.Fill(seq, seq == 2, b); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.IDs, b.IDs) || !slices.Equal(a.Dense, b.Dense) || !slices.Equal(a.Labels, b.Labels) {
			t.Errorf("batch %d: version 1 and 2 differ", seq)
		}
	}
}
