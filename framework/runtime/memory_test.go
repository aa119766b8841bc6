package runtime

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/results"
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

	rss, ms := memory(tables, nil, nil)
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
