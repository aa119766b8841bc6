// Package resources owns what a run may use of the machine and the check
// of a run's needs against it, made before anything runs: the memory
// budget (physical memory from /proc/meminfo, less a margin), the free
// space of the shared-memory directory where every region lives
// (statfs of sdk/region.Dir()), the free space of a directory on disk
// that holds a part (the disk tier), and the address-space limit
// (getrlimit(RLIMIT_AS)).
//
// What a graph needs is computed by the engine, which knows the graph;
// this package only reads the machine and compares. It imports config
// (to place errors at keys) and sdk/region, and no other framework
// package.
package resources

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/sdk/region"
)

// Budget is what a run may use. A zero field is no limit.
type Budget struct {
	// Memory bounds everything a run touches: shared memory and the
	// processes' own.
	Memory int64
	// MemoryFrom says where Memory comes from, for messages.
	MemoryFrom string
	// Shared bounds what the run writes to its regions (the region
	// directory's free space: tmpfs refuses pages beyond its size).
	Shared int64
	// SharedFrom says where Shared comes from.
	SharedFrom string
	// AddressSpace bounds the virtual size of what the run maps.
	AddressSpace int64
}

// MarginFraction and MinMargin are the part of physical memory a run
// leaves to the system and everything else: an eighth, at least 1 GiB.
const (
	MarginFraction = 8
	MinMargin      = 1 << 30
)

// Machine is the budget the machine gives: physical memory less the
// margin, the region directory's free space, RLIMIT_AS. A figure the
// machine does not give (no /proc) is left unlimited.
func Machine() Budget {
	var b Budget
	if total, err := memTotal("/proc/meminfo"); err == nil {
		margin := max(total/MarginFraction, MinMargin)
		b.Memory = max(total-margin, 1)
		b.MemoryFrom = fmt.Sprintf("physical memory %s less %s", config.FormatBytes(float64(total)), config.FormatBytes(float64(margin)))
	}
	dir := region.Dir()
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil && st.Bsize > 0 {
		b.Shared = int64(st.Bavail) * st.Bsize
		b.SharedFrom = fmt.Sprintf("free space of %s", dir)
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_AS, &rl) == nil && rl.Cur != unix.RLIM_INFINITY && rl.Cur < 1<<62 {
		b.AddressSpace = int64(rl.Cur)
	}
	return b
}

// memTotal reads MemTotal from a meminfo file, in bytes.
func memTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "MemTotal" {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: MemTotal: %w", path, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("%s: no MemTotal", path)
}

// Item is one part of what a run needs.
type Item struct {
	// Key is the graph key that sizes it most, where an error about it
	// is placed.
	Key string
	// What names it and how it is counted, for messages.
	What string
	// Bytes is what it touches in the worst case.
	Bytes int64
	// Shared is set for a part held in the run's regions.
	Shared bool
	// Virtual is what it maps, when more than Bytes (a sparse region
	// maps all of its size and is written only in part); 0 means Bytes.
	Virtual int64
	// Dir is set for a part held in files in this directory on disk (the
	// disk tier): its Bytes count against the directory's free space
	// instead of memory and shared memory (the page cache above it is
	// given back under memory pressure).
	Dir string
}

// diskFree is the free space of the file system dir is on.
var diskFree = func(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// Check compares a run's needs with b: what they touch with Memory, the
// shared parts with Shared, and what they map with AddressSpace. Each
// budget exceeded is one error, placed at the key of the largest part,
// listing every part with its figure.
func Check(need []Item, b Budget) error {
	var all, shared, virtual int64
	var sharedItems []Item
	disk := make(map[string][]Item)
	for _, it := range need {
		if it.Dir != "" {
			disk[it.Dir] = append(disk[it.Dir], it)
			virtual = sat(virtual, max(it.Virtual, it.Bytes))
			continue
		}
		all = sat(all, it.Bytes)
		virtual = sat(virtual, max(it.Virtual, it.Bytes))
		if it.Shared {
			shared = sat(shared, it.Bytes)
			sharedItems = append(sharedItems, it)
		}
	}
	var errs []error
	if b.Memory > 0 && all > b.Memory {
		errs = append(errs, exceeded(need, "memory", all, b.Memory, b.MemoryFrom, func(it Item) int64 { return it.Bytes }))
	}
	if b.Shared > 0 && shared > b.Shared {
		errs = append(errs, exceeded(sharedItems, "shared memory", shared, b.Shared, b.SharedFrom, func(it Item) int64 { return it.Bytes }))
	}
	if b.AddressSpace > 0 && virtual > b.AddressSpace {
		errs = append(errs, exceeded(need, "address space", virtual, b.AddressSpace, "RLIMIT_AS (ulimit -v)", func(it Item) int64 { return max(it.Virtual, it.Bytes) }))
	}
	for dir, items := range disk {
		errs = append(errs, checkDisk(dir, items))
	}
	return errors.Join(errs...)
}

// checkDisk compares the parts held in files in dir with its free space.
func checkDisk(dir string, items []Item) error {
	free, err := diskFree(dir)
	if err != nil {
		return config.At(items[0].Key, err)
	}
	var n int64
	for _, it := range items {
		n = sat(n, it.Bytes)
	}
	if n <= free {
		return nil
	}
	return exceeded(items, "disk space in "+dir, n, free, "free space of "+dir, func(it Item) int64 { return it.Bytes })
}

// exceeded is the error of one budget: at the largest part's key, every
// part's figure.
func exceeded(items []Item, what string, total, budget int64, from string, size func(Item) int64) error {
	largest := items[0]
	parts := make([]string, 0, len(items))
	for _, it := range items {
		if size(it) > size(largest) {
			largest = it
		}
		if size(it) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", it.What, fb(size(it))))
		}
	}
	if from != "" {
		from = " (" + from + ")"
	}
	return config.At(largest.Key, fmt.Errorf("the run needs %s of %s, more than the %s it may use%s: %s; the largest part is sized by this key",
		fb(total), what, fb(budget), from, strings.Join(parts, ", ")))
}

func fb(n int64) string { return config.FormatBytes(float64(n)) }

// sat adds without overflowing: a need past int64 is refused anyway.
func sat(a, b int64) int64 {
	if b > 0 && a > (1<<63-1)-b {
		return 1<<63 - 1
	}
	return a + b
}
