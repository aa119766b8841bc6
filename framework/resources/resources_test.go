package resources

import (
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
)

func TestMemTotal(t *testing.T) {
	got, err := memTotal("testdata/meminfo")
	if err != nil || got != 24684084*1024 {
		t.Fatalf("memTotal = %d, %v; want %d", got, err, 24684084*1024)
	}
	if _, err := memTotal("testdata/missing"); err == nil {
		t.Fatal("no error for a missing file")
	}
}

// TestMachine reads this machine: whatever it has, the budget is below
// its physical memory and the shared-memory figure names its directory.
func TestMachine(t *testing.T) {
	b := Machine()
	if b.Memory <= 0 || !strings.HasPrefix(b.MemoryFrom, "physical memory") {
		t.Skipf("no /proc/meminfo here: %+v", b)
	}
	if b.Shared <= 0 || !strings.Contains(b.SharedFrom, "free space of") {
		t.Errorf("shared budget %d from %q", b.Shared, b.SharedFrom)
	}
}

// TestCheckAtTheBudget: a need equal to each budget is accepted, one
// byte more is refused at the key of the largest part, with the figures.
func TestCheckAtTheBudget(t *testing.T) {
	need := []Item{
		{Key: "dataset::batch_size", What: "pool", Bytes: 1 << 20, Shared: true},
		{Key: "cache::size", What: "index", Bytes: 3 << 20},
		{Key: "dataset::rows", What: "mapped", Virtual: 1 << 30},
	}
	fits := Budget{Memory: 4 << 20, Shared: 1 << 20, AddressSpace: 1<<30 + 4<<20}
	if err := Check(need, fits); err != nil {
		t.Fatalf("a need at the budget: %v", err)
	}
	for _, c := range []struct {
		name   string
		budget Budget
		want   string
	}{
		{"memory", Budget{Memory: 4<<20 - 1, MemoryFrom: "physical memory 8 GiB less 1 GiB"},
			"cache::size: the run needs 4 MiB of memory, more than the 4.0 MiB it may use (physical memory 8 GiB less 1 GiB): pool 1 MiB, index 3 MiB"},
		{"shared", Budget{Shared: 1<<20 - 1, SharedFrom: "free space of /dev/shm"},
			"dataset::batch_size: the run needs 1 MiB of shared memory, more than the 1024.0 KiB it may use (free space of /dev/shm): pool 1 MiB"},
		{"address space", Budget{AddressSpace: 1 << 30},
			"dataset::rows: the run needs 1.0 GiB of address space, more than the 1 GiB it may use (RLIMIT_AS (ulimit -v))"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check(need, c.budget)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %q", err, c.want)
			}
			if es := config.Errors(err); len(es) != 1 {
				t.Errorf("%d errors, want one: %v", len(es), err)
			}
		})
	}
}

func TestUnlimitedBudget(t *testing.T) {
	if err := Check([]Item{{Key: "k", Bytes: 1 << 62}}, Budget{}); err != nil {
		t.Fatal(err)
	}
}

// TestCheckDisk: a part on disk counts against its directory's free
// space, not memory or shared memory.
func TestCheckDisk(t *testing.T) {
	old := diskFree
	defer func() { diskFree = old }()
	diskFree = func(dir string) (int64, error) { return 10 << 20, nil }
	need := []Item{
		{Key: "dataset::batch_size", What: "pool", Bytes: 1 << 20, Shared: true},
		{Key: "dataset::batches", What: "tables", Bytes: 10 << 20, Dir: "/data"},
	}
	if err := Check(need, Budget{Memory: 1 << 20, Shared: 1 << 20}); err != nil {
		t.Fatalf("fits: %v", err)
	}
	need[1].Bytes++
	err := Check(need, Budget{Memory: 1 << 20, Shared: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "disk space in /data") || !strings.Contains(err.Error(), "dataset::batches") {
		t.Fatalf("over the disk: %v", err)
	}
}
