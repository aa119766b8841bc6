package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/plugins/caches/mpcache"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/kernel/quant"
	"github.com/flowrun/flowrun/sdk/plugin"
)

func TestMemoryFigures(t *testing.T) {
	tables, err := batch.NewTables(1, 2, 1<<20, 32, 0) // 256 MiB, virtual
	if err != nil {
		t.Fatal(err)
	}
	defer tables.Close()
	if err := tables.TouchTables([][]int64{{1, 2, 3}, {1 << 19}}); err != nil {
		t.Fatal(err)
	}
	// A child process stands in for an out-of-process plugin.
	child := exec.Command("sleep", "10")
	if err := child.Start(); err != nil {
		t.Skipf("no child process: %v", err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()

	rss, ms := memory(tables, nil, "", nil)
	if rss <= 0 {
		t.Errorf("host_rss_peak_bytes = %d", rss)
	}
	find := func(prefix string) results.Memory {
		t.Helper()
		for _, m := range ms {
			if strings.HasPrefix(m.What, prefix) {
				return m
			}
		}
		t.Fatalf("no %q figure in %+v", prefix, ms)
		return results.Memory{}
	}
	if m := find("host tables: allocated"); m.Source != results.MemoryMeasured || m.PeakBytes <= 0 || m.PeakBytes > 4*16<<10 || m.VirtualBytes != 2<<20*32*4 {
		t.Errorf("allocated: %+v (want a few pages of a 256 MiB table)", m)
	}
	if m := find("host tables: touched"); m.Source != results.MemoryCounted || m.PeakBytes != 4*32*4 {
		t.Errorf("touched: %+v, want 4 rows of 128 bytes", m)
	}
	if m := find("plugin processes (1)"); m.PeakBytes <= 0 {
		t.Errorf("children: %+v", m)
	}
}

// Storage's memory is reported under the device that holds it.
func TestMemoryStorageDevice(t *testing.T) {
	tables, err := batch.NewTables(1, 1, 1000, 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tables.Close()
	storage, err := batch.NewStorage(1, 100, 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer storage.Close()
	for device, want := range map[string]string{"gpu": "gpu", "": "host"} {
		_, ms := memory(tables, storage, device, nil)
		var got []string
		for _, m := range ms {
			if strings.HasPrefix(m.What, "Storage") {
				got = append(got, m.Device)
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("storage device %q: Storage reported under %v, want %s", device, got, want)
		}
	}
}

// Appendix A's Table 11 (D = 128, LFU; the spec's Q6, to five decimals)
// from the code that fills results.json's memory_compression: compression
// over real low-precision host tables, with the memory builtin:mpcache
// declares for its geometry (32 ways, the fraction of the table's rows)
// in its Needs. The cacheless rows are Eq. 3 alone: no cache, no counts.
func TestEq2Table11(t *testing.T) {
	const rows, dim = 64000, 128 // c·rows a multiple of α at every c
	for _, tc := range []struct {
		prec   quant.Precision
		cache  float64
		factor float64
	}{
		{quant.INT8, 0, 0.26563}, {quant.INT4, 0, 0.14063}, {quant.INT2, 0, 0.07813},
		{quant.INT4, 0.3, 0.45078}, {quant.INT8, 0.1, 0.37422}, {quant.INT8, 0.05, 0.32383},
		{quant.INT4, 0.1, 0.24922}, {quant.INT4, 0.05, 0.19883},
		{quant.INT2, 0.1, 0.18672}, {quant.INT2, 0.05, 0.13633},
	} {
		tables, err := batch.NewTablesPrecision(1, []int64{rows}, dim, dim, batch.Precision{Precision: tc.prec})
		if err != nil {
			t.Fatal(err)
		}
		mem := []cache.TableMemory{{}}
		if tc.cache > 0 {
			setup := plugin.Setup{Tables: []plugin.Table{{Rows: rows, Dim: dim}},
				Options: json.RawMessage(fmt.Sprintf(`{"capacity":%d,"ways":32,"replacement":"lfu","fraction":%g}`, rows, tc.cache))}
			needs, err := cache.NeedsOf(context.Background(), mpcache.New(), setup)
			if err != nil {
				t.Fatal(err)
			}
			mem = needs.Memory
			if want := int64(math.Round(tc.cache * rows)); len(mem) != 1 || mem[0].CachedRows != want {
				t.Fatalf("%v at %g: mpcache declares %+v, want %d cached rows", tc.prec, tc.cache, mem, want)
			}
		}
		mc := compression(tables, config.Embedding{Precision: tc.prec.String()}, mem)
		tables.Close()
		if mc == nil {
			t.Fatalf("%v: no memory_compression", tc.prec)
		}
		// Five decimals, halves up as the paper rounds 0.265625 to 0.26563.
		if got := math.Round(mc.Eq2 * 1e5); got != math.Round(tc.factor*1e5) {
			t.Errorf("%v with a %g cache: eq2 %v, Table 11 %.5f", tc.prec, tc.cache, mc.Eq2, tc.factor)
		}
		if eq3 := quant.TablesFactor([]int64{rows}, []quant.Precision{tc.prec}, dim); mc.Eq3 != eq3 {
			t.Errorf("%v: eq3 %v, want TablesFactor's %v", tc.prec, mc.Eq3, eq3)
		}
		if tc.cache == 0 && (mc.Eq2 != mc.Eq3 || mc.CacheBytes != 0) {
			t.Errorf("%v without a cache: eq2 %v, %d cache bytes; want eq3 %v and none", tc.prec, mc.Eq2, mc.CacheBytes, mc.Eq3)
		}
	}
}

// A policy that declares no memory (nil), or memory for other tables than
// the run's, leaves eq2 out rather than guessing.
func TestEq2Undeclared(t *testing.T) {
	tables, err := batch.NewTablesPrecision(1, []int64{5000, 5000}, 16, 16, batch.Precision{Precision: quant.INT8})
	if err != nil {
		t.Fatal(err)
	}
	defer tables.Close()
	for _, mem := range [][]cache.TableMemory{nil, {{CachedRows: 10, CachedRowBytes: 68}}} {
		if mc := compression(tables, config.Embedding{Precision: "int8"}, mem); mc == nil || mc.Eq2 != 0 || mc.CacheBytes != 0 || mc.Eq3 == 0 {
			t.Errorf("memory %+v: memory_compression %+v, want eq3 alone", mem, mc)
		}
	}
}
