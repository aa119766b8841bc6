package engine

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
)

// memory measures where a run's memory went, at its end. Every region
// flowrun creates is a sparse shared-memory file whose pages are allocated
// on first write and kept until the run ends, so their allocated blocks at
// the end are their peak. Process figures are peaks kept by the kernel.
// Storage stands in for the memory of storageDevice (the graph's device
// that holds it; "" is the host) and is reported under that device,
// labelled as living in host shared memory; everything else is the host's.
func memory(tables *batch.Tables, storage *batch.Storage, storageDevice string, pool *batch.Pool) (rssPeak int64, ms []results.Memory) {
	add := func(what string, peak, virtual int64, source string) {
		ms = append(ms, results.Memory{Device: "host", What: what, PeakBytes: peak, VirtualBytes: virtual, Source: source})
	}
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		rssPeak = ru.Maxrss * 1024 // kilobytes on Linux
		add("flowrun process: peak resident set (getrusage maxrss; includes the shared-memory pages it touched)", rssPeak, 0, results.MemoryMeasured)
	}
	if n, peak := childrenPeakRSS(); n > 0 {
		add(fmt.Sprintf("plugin processes (%d): sum of their peak resident sets (VmHWM; shared-memory pages count in every process that maps them)", n), peak, 0, results.MemoryMeasured)
	}
	if b, err := tables.AllocatedBytes(); err == nil {
		add("host tables: "+tables.Where()+" (file blocks)", b, tables.VirtualBytes(), results.MemoryMeasured)
	}
	if b, ok := tables.ResidentBytes(); ok { // the disk tier's DRAM
		add("host tables: resident in the page cache at the end (mincore)", b, tables.VirtualBytes(), results.MemoryMeasured)
	}
	add("host tables: touched rows × row bytes (values and optimizer state)", tables.TouchedBytes(), tables.VirtualBytes(), results.MemoryCounted)
	if storage != nil {
		if b, err := storage.AllocatedBytes(); err == nil {
			add("Storage (device-side cache rows, held in host shared memory): allocated (file blocks)", b, storage.VirtualBytes(), results.MemoryMeasured)
			if storageDevice != "" {
				ms[len(ms)-1].Device = storageDevice
			}
		}
	}
	if pool != nil {
		if b, err := pool.AllocatedBytes(); err == nil {
			add(fmt.Sprintf("batch pool (%d buffers): allocated shared memory (file blocks)", pool.Cap()), b, pool.VirtualBytes(), results.MemoryMeasured)
		}
	}
	return rssPeak, ms
}

// compression is the host tables' memory compression (Eq. 2–3, counted
// and measured), nil when they are all FP32 or cannot be measured; with
// the cache's memory its policy declared (mem, one per table), Eq. 2 with
// the cache's terms too.
func compression(tables *batch.Tables, e config.Embedding, mem []cache.TableMemory) *results.MemoryCompression {
	c, ok, err := tables.Compression()
	if !ok || err != nil {
		return nil
	}
	mc := &results.MemoryCompression{Precision: e.Precision, Storage: e.Storage, Eq3: c.Eq3, Counted: c.Counted, Measured: c.Measured}
	if len(mem) == tables.Len() {
		rows := make([]int64, tables.Len())
		precs := make([]quant.Precision, tables.Len())
		for t := range rows {
			rows[t], precs[t] = tables.RowsOf(t), tables.PrecisionOf(t)
		}
		mc.Eq2, mc.CacheBytes = eq2(rows, precs, tables.Dim, mem)
	}
	return mc
}

// eq2 is the mixed-precision paper's Eq. 2 over tables of the given rows,
// each stored at its precision beside a cache of memory mem[t]:
// (M_Tlowprec + M_C + M_tags + M_cnt) / M_TFP32, with M_Tlowprec by Eq. 3
// (quant.RowBits, as Eq3's TablesFactor) and the cache's terms in bytes
// as the policy declares them (TableMemory.Bytes); it also returns those
// bytes. Appendix A's Table 11 is this at D = 128 with builtin:mpcache's
// declaration (memory_test.go).
func eq2(rows []int64, precs []quant.Precision, dim int, mem []cache.TableMemory) (factor float64, cacheBytes int64) {
	var num, den float64
	for t, n := range rows {
		b := mem[t].Bytes(n)
		cacheBytes += b
		num += float64(n)*float64(quant.RowBits(precs[t], dim)) + 8*float64(b)
		den += float64(n) * 32 * float64(dim)
	}
	if den == 0 {
		return 1, cacheBytes
	}
	return num / den, cacheBytes
}

// childrenPeakRSS sums the peak resident sets of this process's live
// children (the out-of-process plugins), from /proc. It returns how many
// it found; none where /proc is missing.
func childrenPeakRSS() (n int, peak int64) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, hwm, ok := procStatus(pid)
		if ok && ppid == self {
			n++
			peak += hwm
		}
	}
	return n, peak
}

// procStatus reads a process's parent and peak resident set (bytes) from
// /proc/PID/status.
func procStatus(pid int) (ppid int, hwm int64, ok bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	var havePPid bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		switch k {
		case "PPid":
			ppid, err = strconv.Atoi(fields[0])
			havePPid = err == nil
		case "VmHWM":
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			if err == nil {
				hwm = kb * 1024
			}
		}
	}
	return ppid, hwm, havePPid
}

// storageDevice names the device that holds the graph's Storage: the first
// a stage config names through StorageDeviceName (insert's device,
// collect's storage_device), "" when none does.
func storageDevice(g *graph.Graph) string {
	for _, n := range g.Nodes {
		if h, ok := n.Options.(interface{ StorageDeviceName() string }); ok && h.StorageDeviceName() != "" {
			return h.StorageDeviceName()
		}
	}
	return ""
}
