package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rowsOf is a RowSource over fixed rows.
type rowsOf struct {
	rowBytes int
	rows     []map[int64][]byte
}

func (r rowsOf) Tables() int                    { return len(r.rows) }
func (r rowsOf) RowBytes(int) int               { return r.rowBytes }
func (r rowsOf) RowData(t int, id int64) []byte { return r.rows[t][id] }
func (r rowsOf) TouchedIDs(t int) []int64 {
	var ids []int64
	for id := range int64(100) {
		if _, ok := r.rows[t][id]; ok {
			ids = append(ids, id)
		}
	}
	return ids
}

var testID = Identity{Graph: "g", GraphHash: HashOf("a", "b"), Seed: 7, ConfigDigest: HashOf("cfg")}

func sample() rowsOf {
	return rowsOf{rowBytes: 8, rows: []map[int64][]byte{
		{3: []byte("abcdefgh"), 40: []byte("ijklmnop")},
		{},
		{0: []byte("qrstuvwx")},
	}}
}

func writeSample(t *testing.T, root string) string {
	t.Helper()
	src := sample()
	dir, err := Write(root, Manifest{Identity: testID, Batch: 8, Total: 20}, []Part{
		{Name: "rows", Write: func(w io.Writer) error { return EncodeRows(w, src) }},
		{Name: "model", Write: func(w io.Writer) error { _, err := w.Write([]byte("dense state")); return err }},
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRoundTrip writes a checkpoint and reads back its manifest and
// every part, bytes and rows unchanged; Open of the root takes the latest.
func TestRoundTrip(t *testing.T) {
	root := t.TempDir()
	dir := writeSample(t, root)
	if filepath.Base(dir) != Name(8) {
		t.Fatalf("dir %s, want %s", dir, Name(8))
	}
	for _, path := range []string{dir, root} {
		c, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.Batch != 8 || c.Total != 20 || c.Format != FormatVersion || c.Identity != testID || c.Dir != dir {
			t.Fatalf("manifest %+v", c.Manifest)
		}
		if err := c.Identity.Check(testID); err != nil {
			t.Fatal(err)
		}
		if m, _ := c.Part("model"); string(m) != "dense state" {
			t.Fatalf("model part %q", m)
		}
		rows, _ := c.Part("rows")
		got := rowsOf{rows: nil}
		err = DecodeRows(rows, func(table, rb int, n uint64) error {
			got.rowBytes = rb
			got.rows = append(got.rows, map[int64][]byte{})
			return nil
		}, func(table int, id int64, raw []byte) error {
			got.rows[table][id] = bytes.Clone(raw)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := sample()
		if got.rowBytes != want.rowBytes || len(got.rows) != len(want.rows) {
			t.Fatalf("rows %+v", got)
		}
		for tab := range want.rows {
			if len(got.rows[tab]) != len(want.rows[tab]) {
				t.Fatalf("table %d: %d rows, want %d", tab, len(got.rows[tab]), len(want.rows[tab]))
			}
			for id, raw := range want.rows[tab] {
				if !bytes.Equal(got.rows[tab][id], raw) {
					t.Fatalf("table %d row %d: %q, want %q", tab, id, got.rows[tab][id], raw)
				}
			}
		}
	}
}

// TestEveryTruncationAndFlippedByteRefused cuts every file of a
// checkpoint at every length, and flips every byte of it, one at a time:
// Open refuses each with ErrCorrupt (or ErrMismatch for the format) and a
// one-line error.
func TestEveryTruncationAndFlippedByteRefused(t *testing.T) {
	dir := writeSample(t, t.TempDir())
	for _, name := range []string{ManifestName, "rows", "model"} {
		path := filepath.Join(dir, name)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		try := func(what string, b []byte) {
			t.Helper()
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir)
			switch {
			case err == nil:
				t.Fatalf("%s %s: accepted", name, what)
			case !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrMismatch):
				t.Fatalf("%s %s: %v, want ErrCorrupt", name, what, err)
			case strings.Contains(err.Error(), "\n"):
				t.Fatalf("%s %s: error of several lines: %q", name, what, err)
			}
		}
		for n := range len(orig) {
			try("cut at "+itoa(n), orig[:n])
		}
		for i := range orig {
			b := bytes.Clone(orig)
			b[i] ^= 0x20
			try("byte "+itoa(i)+" flipped", b)
		}
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(dir); err != nil {
		t.Fatalf("restored: %v", err)
	}
	// A file beside the listed ones, or one missing, is refused too.
	if err := os.WriteFile(filepath.Join(dir, "extra"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("extra file: %v", err)
	}
	os.Remove(filepath.Join(dir, "extra"))
	os.Remove(filepath.Join(dir, "model"))
	if _, err := Open(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("missing file: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestMismatchRefused: another graph, seed or config is refused, naming
// which, with ErrMismatch.
func TestMismatchRefused(t *testing.T) {
	for name, other := range map[string]Identity{
		"graph":  {Graph: "h", GraphHash: HashOf("a", "c"), Seed: 7, ConfigDigest: testID.ConfigDigest},
		"seed":   {Graph: "g", GraphHash: testID.GraphHash, Seed: 8, ConfigDigest: testID.ConfigDigest},
		"config": {Graph: "g", GraphHash: testID.GraphHash, Seed: 7, ConfigDigest: HashOf("other")},
	} {
		err := testID.Check(other)
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestAtomicAndPruned: a failing part leaves no checkpoint and no
// temporary directory; Prune keeps the newest.
func TestAtomicAndPruned(t *testing.T) {
	root := t.TempDir()
	_, err := Write(root, Manifest{Identity: testID, Batch: 4}, []Part{
		{Name: "a", Write: func(w io.Writer) error { return errors.New("disk full") }},
	})
	if err == nil {
		t.Fatal("a failing part was written")
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("a failed write left %v", entries)
	}
	for _, b := range []uint64{4, 8, 12} {
		if _, err := Write(root, Manifest{Identity: testID, Batch: b}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := Prune(root, 2); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 2 || entries[0].Name() != Name(8) || entries[1].Name() != Name(12) {
		t.Fatalf("after Prune: %v", entries)
	}
	if c, err := Open(root); err != nil || c.Batch != 12 {
		t.Fatalf("latest: %v %v", c, err)
	}
}

// TestPruneLeavesLiveWrites: a temporary directory of a live writer (this
// process) stays; one of a dead writer goes.
func TestPruneLeavesLiveWrites(t *testing.T) {
	root := t.TempDir()
	live := filepath.Join(root, tmpPrefix+Name(4)+"-"+strconv.Itoa(os.Getpid())+"-1")
	dead := filepath.Join(root, tmpPrefix+Name(8)+"-"+strconv.Itoa(1<<22+7)+"-1") // above pid_max's default
	for _, d := range []string{live, dead} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Prune(root, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live write's directory was removed: %v", err)
	}
	if _, err := os.Stat(dead); err == nil {
		t.Error("a dead write's directory was kept")
	}
}
