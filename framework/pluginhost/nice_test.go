//go:build linux

package pluginhost_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
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

// A builtin asked for under WithOwnProcess runs in a process of its own,
// served by the host's BuiltinServer (here this test binary, TestMain),
// and answers as in process; without it, or on a host without a server,
// it runs in process.
func TestWithOwnProcess(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h := newHost(t, pluginhost.Settings{BuiltinServer: &pluginhost.BuiltinServer{Path: self}})
	c, err := h.Cache(pluginhost.WithNice(pluginhost.WithOwnProcess(ctx), 19), "builtin:echo")
	if err != nil {
		t.Fatal(err)
	}
	procs := h.Processes()
	if len(procs) != 1 || procs[0].Name != "echo" || procs[0].Path != self {
		t.Fatalf("processes %+v, want the builtin server serving echo", procs)
	}
	if got := niceness(t, procs[0].Pid, strconv.Itoa(procs[0].Pid)); got != 19 {
		t.Errorf("niceness %d, want 19", got)
	}
	if _, err := h.Cache(ctx, "builtin:echo"); err != nil || len(h.Processes()) != 1 {
		t.Errorf("without WithOwnProcess: %v, %d processes", err, len(h.Processes()))
	}
	if err := c.Configure(ctx, plugin.Setup{Options: []byte(`{"capacity": 8}`)}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Plan(ctx, &cache.PlanRequest{Seq: 1, TableOffsets: []int64{0, 3, 5}})
	if err != nil || len(res.Tables) != 2 || res.Tables[1].Misses != 2 {
		t.Fatalf("Plan = %+v, %v", res, err)
	}
	plain := newHost(t, pluginhost.Settings{})
	if _, err := plain.Cache(pluginhost.WithOwnProcess(ctx), "builtin:echo"); err != nil || len(plain.Processes()) != 0 {
		t.Errorf("a host without a server: %v, %d processes", err, len(plain.Processes()))
	}
}
