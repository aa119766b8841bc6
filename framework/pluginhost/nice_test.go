//go:build linux

package pluginhost_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/pluginhost"
)

// niceness is field 19 of /proc/PID/task/TID/stat.
func niceness(t *testing.T, pid int, tid string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + tid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: count after it.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A process launched under WithNice runs every thread at that niceness,
// one launched without it at the host's; an out-of-range niceness is
// refused and the process stopped.
func TestWithNice(t *testing.T) {
	h := newHost(t, pluginhost.Settings{})
	ctx := context.Background()
	if _, err := h.Cache(ctx, echoBin); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Cache(pluginhost.WithNice(ctx, 19), echoBin); err != nil {
		t.Fatal(err)
	}
	procs := h.Processes()
	if len(procs) != 2 {
		t.Fatalf("%d processes", len(procs))
	}
	own := niceness(t, os.Getpid(), strconv.Itoa(os.Getpid()))
	for i, want := range []int{own, 19} {
		pid := procs[i].Pid
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if got := niceness(t, pid, task.Name()); got != want {
				t.Errorf("process %d thread %s: niceness %d, want %d", i, task.Name(), got, want)
			}
		}
	}
	if _, err := h.Cache(pluginhost.WithNice(ctx, 20), echoBin); err == nil || !strings.Contains(err.Error(), "niceness 20") {
		t.Errorf("niceness 20: %v, want refused", err)
	}
	if n := len(h.Processes()); n != 2 {
		t.Errorf("%d processes after a refused niceness, want 2", n)
	}
}
