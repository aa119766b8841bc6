package region

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestCreateOpenShareBytes(t *testing.T) {
	r, err := Create("test", 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A second, independent mapping (as a plugin process makes) sees the
	// host's writes and the host sees its writes: the memory is shared.
	o, err := Open(r.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	Float32s(r.Bytes())[3] = 1.5
	if got := Float32s(o.Bytes())[3]; got != 1.5 {
		t.Fatalf("other mapping reads %v", got)
	}
	Int64s(o.Bytes())[10] = 42
	if got := Int64s(r.Bytes())[10]; got != 42 {
		t.Fatalf("owner reads %v", got)
	}
}

func TestMapperBoundsAndMissing(t *testing.T) {
	r, err := Create("bounds", 128)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var m Mapper
	defer m.Close()
	if b, err := m.Bytes(r.Ref().Sub(64, 64)); err != nil || len(b) != 64 {
		t.Fatalf("in-bounds ref: %d bytes, %v", len(b), err)
	}
	if _, err := m.Bytes(r.Ref().Sub(64, 65)); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("past the end: %v", err)
	}
	if _, err := m.Bytes(Ref{Region: r.Name(), Offset: -8, Length: 8}); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("negative offset: %v", err)
	}
	if _, err := m.Bytes(Ref{Region: Prefix + "1-1-gone", Length: 8}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing region: %v", err)
	}
	if _, err := m.Bytes(Ref{Region: "../../etc/passwd", Length: 8}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("path outside the region directory: %v", err)
	}
	if b, err := m.Bytes(Ref{}); err != nil || b != nil {
		t.Fatalf("zero ref: %v %v", b, err)
	}
}

func TestCloseRemovesOwnedFileOnly(t *testing.T) {
	r, err := Create("owned", 64)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(Dir(), r.Name())
	o, err := Open(r.Name())
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("closing a non-owner removed the file: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("owner close left the file: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// Regions of a process that died are swept; a live process's are kept.
func TestSweepRemovesDeadOwnersOnly(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` binary:", err)
	}
	dead := cmd.Process.Pid // exited and reaped: not alive
	files := map[string]bool{
		fmt.Sprintf("%s%d-1-batch0", Prefix, dead):        false,
		fmt.Sprintf("%s%d-2-table0", Prefix, os.Getpid()): true,
		"unrelated-file": true,
	}
	for name := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := Sweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("swept %d, want 1", n)
	}
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if kept != (err == nil) {
			t.Errorf("%s: kept=%v, want %v", name, err == nil, kept)
		}
	}
}

func TestCreateRejectsBadSize(t *testing.T) {
	if _, err := Create("zero", 0); err == nil {
		t.Fatal("Create accepted size 0")
	}
}

func TestAdviseHugePages(t *testing.T) {
	r, err := Create("hugepages", 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.AdviseHugePages(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("AdviseHugePages: %v", err)
	}
	r.Bytes()[0] = 1 // the region stays usable
	r.Close()
	if err := r.AdviseHugePages(); err == nil {
		t.Fatal("AdviseHugePages on a closed region: no error")
	}
}

func TestRefOverlaps(t *testing.T) {
	a := Ref{Region: "r", Offset: 0, Length: 8}
	for _, c := range []struct {
		b    Ref
		want bool
	}{
		{Ref{Region: "r", Offset: 4, Length: 8}, true},
		{Ref{Region: "r", Offset: 8, Length: 8}, false},
		{Ref{Region: "s", Offset: 0, Length: 8}, false},
		{Ref{Region: "r", Offset: 2, Length: 0}, false},
		{Ref{}, false},
	} {
		if got := a.Overlaps(c.b); got != c.want || c.b.Overlaps(a) != c.want {
			t.Errorf("%s overlaps %s: %v, want %v", a, c.b, got, c.want)
		}
	}
}

// TestCreateIn checks a region made in a directory on disk: its file is
// there, Open finds it by name through the link in Dir(), both mappings
// share its bytes, and Close removes the link and the file.
func TestCreateIn(t *testing.T) {
	dir := t.TempDir()
	r, err := CreateIn(dir, "disk", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(r.File()) != dir {
		t.Fatalf("file %s, want it in %s", r.File(), dir)
	}
	o, err := Open(r.Name())
	if err != nil {
		t.Fatal(err)
	}
	r.Bytes()[12345] = 7
	if o.Bytes()[12345] != 7 || o.Size() != 1<<20 {
		t.Fatalf("opened mapping: byte %d, size %d", o.Bytes()[12345], o.Size())
	}
	o.Close()
	file := r.File()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(Dir(), r.Name())} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s left after Close: %v", p, err)
		}
	}
}
