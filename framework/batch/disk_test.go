package batch

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/sdk/kernel/quant"
)

// TestDiskTierSameDigest checks that tables in files on disk
// (Precision.Dir) hold what tables in shared memory hold: the same rows
// touched and written end with the same digest, FP32 and packed INT8
// alike, and the files lie in the directory, not in region.Dir().
func TestDiskTierSameDigest(t *testing.T) {
	for _, p := range []Precision{{}, {Precision: quant.INT8, Rounding: quant.Stochastic}} {
		t.Run(p.Precision.String(), func(t *testing.T) {
			dir := t.TempDir()
			shm, err := NewTablesPrecision(3, []int64{1 << 16, 1 << 12}, 16, 32, p)
			if err != nil {
				t.Fatal(err)
			}
			defer shm.Close()
			p.Dir = dir
			disk, err := NewTablesPrecision(3, []int64{1 << 16, 1 << 12}, 16, 32, p)
			if err != nil {
				t.Fatal(err)
			}
			disk.trimAt = 64 << 10 // trim the mappings often: values survive

			files, _ := filepath.Glob(filepath.Join(dir, "flowrun-*"))
			if len(files) < 2 {
				t.Fatalf("files in %s: %v, want the tables'", dir, files)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			row := make([]float32, 32)
			for seq := range uint64(10) {
				ids := make([]int64, 500)
				for i := range ids {
					ids[i] = rng.Int64N(1 << 12)
				}
				for _, tab := range []*Tables{shm, disk} {
					if err := tab.TouchTables([][]int64{ids, ids}); err != nil {
						t.Fatal(err)
					}
					for _, id := range ids[:50] {
						tab.ReadRow(0, id, row)
						row[0] += 0.5
						tab.WriteRow(0, id, row, seq)
					}
				}
			}
			if a, b := shm.Digest(nil), disk.Digest(nil); a != b {
				t.Fatalf("digest on disk %s, in shared memory %s", b, a)
			}
			if disk.trims.Load() == 0 || shm.trims.Load() != 0 {
				t.Fatalf("trims: %d on disk (want some), %d in shared memory", disk.trims.Load(), shm.trims.Load())
			}
			if n, err := disk.AllocatedBytes(); err != nil || n <= 0 {
				t.Fatalf("allocated on disk: %d, %v", n, err)
			}
			if err := disk.Close(); err != nil {
				t.Fatal(err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("left in %s after Close: %v", dir, left)
			}
		})
	}
}

// A directory that is not one is refused with the path.
func TestDiskTierBadDir(t *testing.T) {
	_, err := NewTablesPrecision(1, []int64{10}, 4, 4, Precision{Dir: "/nonexistent/tables"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/tables") {
		t.Fatalf("err %v", err)
	}
}

// Tables on disk report their resident pages; tables in shared memory do
// not (all their pages are resident).
func TestDiskTierResident(t *testing.T) {
	disk, err := NewTablesPrecision(1, []int64{1 << 16}, 16, 16, Precision{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	if err := disk.Touch(0, []int64{0, 1 << 15}); err != nil {
		t.Fatal(err)
	}
	if n, ok := disk.ResidentBytes(); !ok || n < 2*4096 {
		t.Fatalf("resident %d, %v: want ≥ the 2 touched pages", n, ok)
	}
	if !strings.Contains(disk.Where(), "on disk") {
		t.Fatalf("where: %s", disk.Where())
	}
	shm, err := NewTables(1, 1, 10, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	if _, ok := shm.ResidentBytes(); ok || shm.Where() != "allocated shared memory" {
		t.Fatalf("shared memory: where %q, resident reported %v", shm.Where(), ok)
	}
}
