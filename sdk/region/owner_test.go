package region

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestParseCreator(t *testing.T) {
	for name, want := range map[string]creator{
		Prefix + "42-1-batch":      {pid: 42},
		Prefix + "42.98765-7-t0-x": {pid: 42, start: 98765},
		Prefix + "0-0-gone":        {},
		Prefix + "x-1-batch":       {},
		Prefix + "42.y-1-batch":    {},
		"unrelated-42-1":           {},
		Prefix + "nodash":          {},
	} {
		got, ok := parseCreator(name)
		if ok != (want.pid > 0) || got != want {
			t.Errorf("parseCreator(%q) = %+v, %v; want %+v", name, got, ok, want)
		}
	}
}

func TestParseStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "4242 (a (b) c) Z 1 4242 4242 0 -1 4194560 96 0 0 0 0 0 0 0 20 0 1 0 123456 0 0"
	st, ok := parseStat(line)
	if !ok || st.state != 'Z' || st.start != 123456 {
		t.Fatalf("parseStat = %+v, %v; want state Z, start 123456", st, ok)
	}
	if _, ok := parseStat("4242 (x) S 1"); ok {
		t.Error("parseStat accepted a short line")
	}
}

// TestAliveZombieAndReusedPID is the sweep's liveness check on what a
// kill(pid, 0) gets wrong: a zombie exists but is dead, and a process
// that got the creator's PID after it died is another process.
func TestAliveZombieAndReusedPID(t *testing.T) {
	stat := func(state byte, start uint64) func(int) (procState, bool) {
		return func(int) (procState, bool) { return procState{state: state, start: start}, true }
	}
	for _, c := range []struct {
		name string
		c    creator
		stat func(int) (procState, bool)
		want bool
	}{
		{"running, same start", creator{pid: 7, start: 100}, stat('S', 100), true},
		{"running, no start recorded", creator{pid: 7}, stat('R', 100), true},
		{"zombie", creator{pid: 7, start: 100}, stat('Z', 100), false},
		{"dead", creator{pid: 7}, stat('X', 100), false},
		{"pid reused", creator{pid: 7, start: 100}, stat('S', 250), false},
	} {
		if got := c.c.aliveWith(c.stat); got != c.want {
			t.Errorf("%s: alive %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSweepRealZombie leaves a real child unreaped (a zombie) with a
// region in its name: the sweep removes it, as it removes one signed
// with this process's PID but another start time.
func TestSweepRealZombie(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("zombies are recognised through /proc")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip("no `true` binary:", err)
	}
	defer cmd.Wait()
	zombie := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, ok := procStat(zombie)
		if ok && st.state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d never became a zombie (%+v, %v)", zombie, st, ok)
		}
		time.Sleep(10 * time.Millisecond)
	}
	self, ok := procStat(os.Getpid())
	if !ok {
		t.Fatal("no /proc/self/stat")
	}
	dir := t.TempDir()
	files := map[string]bool{ // name -> kept
		fmt.Sprintf("%s%d-1-zombie", Prefix, zombie):                       false,
		fmt.Sprintf("%s%d.%d-1-reused", Prefix, os.Getpid(), self.start+1): false,
		fmt.Sprintf("%s%d.%d-1-mine", Prefix, os.Getpid(), self.start):     true,
		fmt.Sprintf("other-%d-1-x", zombie):                                true,
	}
	for name := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Sweep(dir); err != nil {
		t.Fatal(err)
	}
	for name, kept := range files {
		if _, err := os.Stat(filepath.Join(dir, name)); kept != (err == nil) {
			t.Errorf("%s: kept=%v, want %v", name, err == nil, kept)
		}
	}
}

func TestCreateSignsWithStartTime(t *testing.T) {
	r, err := Create("signed", 64)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, ok := parseCreator(r.Name())
	if !ok || c.pid != os.Getpid() || !c.alive() {
		t.Fatalf("region %s: creator %+v (%v), want this process, alive", r.Name(), c, ok)
	}
	if runtime.GOOS == "linux" && c.start == 0 {
		t.Errorf("region %s records no start time", r.Name())
	}
}
