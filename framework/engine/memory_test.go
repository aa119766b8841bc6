package engine

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
