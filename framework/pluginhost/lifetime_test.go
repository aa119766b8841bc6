package pluginhost_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// helperHostEnv makes the test binary a plugin host that launches the
// cache plugin the variable names, prints its pid and waits to be killed.
const helperHostEnv = "PLUGINHOST_TEST_HELPER_HOST"

func helperHost(path string) {
	h, err := pluginhost.New(pluginhost.Settings{})
	if err == nil {
		_, err = h.Cache(context.Background(), path)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(h.Processes()[0].Pid)
	time.Sleep(time.Minute)
	os.Exit(1)
}

// startHelperHost starts the test binary as a plugin host of the plugin
// at path (helperHost) and returns it with its plugin's pid. The host is
// killed when the test ends.
func startHelperHost(t *testing.T, path string) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperHostEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		line <- sc.Text()
	}()
	select {
	case l := <-line:
		pid, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("helper host: %q", l)
		}
		return cmd, pid
	case <-time.After(20 * time.Second):
		t.Fatal("helper host printed no plugin pid")
		return nil, 0
	}
}

// gone reports whether pid no longer runs: no such process, or a zombie
// (a container's init may never reap it).
func gone(pid int) bool {
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		line := string(data)
		if i := strings.LastIndexByte(line, ')'); i > 0 && i+2 < len(line) {
			return line[i+2] == 'Z' || line[i+2] == 'X'
		}
	}
	return syscall.Kill(pid, 0) != nil
}

// waitGone waits up to d for pid to go.
func waitGone(t *testing.T, pid int, d time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !gone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s (pid %d) still runs %v later", what, pid, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readPID waits up to ten seconds for a script to write a pid to file.
func readPID(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(file)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", file)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// forkingScript is a "plugin" that never answers the handshake and forks
// a child that keeps its stdout and stderr open: go-plugin's Kill waits
// for those pipes, so without a group kill it waits for ever.
func forkingScript(t *testing.T) (script, pidFile string) {
	pidFile = filepath.Join(t.TempDir(), "child.pid")
	// Written then renamed, so that readPID never reads half a pid.
	return writeScript(t, fmt.Sprintf("#!/bin/sh\nsleep 300 &\necho $! > %[1]s.tmp\nmv %[1]s.tmp %[1]s\nwait\n", pidFile)), pidFile
}

// TestForkedChildPluginFailsInBound: a script that forks and never
// answers fails once the start timeout passes, within a bound (start
// timeout plus the kill deadlines), and its child is gone.
func TestForkedChildPluginFailsInBound(t *testing.T) {
	script, pidFile := forkingScript(t)
	h := newHost(t, pluginhost.Settings{StartTimeout: time.Second})
	done := make(chan error, 1)
	go func() {
		_, err := h.Cache(context.Background(), script)
		done <- err
	}()
	child := readPID(t, pidFile)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no go-plugin handshake within 1s") || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q, want one line saying there was no handshake", err)
		}
	case <-time.After(15 * time.Second):
		syscall.Kill(child, syscall.SIGKILL)
		t.Fatal("launch still blocked 15 s after a 1 s start timeout")
	}
	waitGone(t, child, 2*time.Second, "the script's forked child")
}

// TestStartHonoursContext: a start the context cancels returns at once,
// and the process group is killed once go-plugin lets go.
func TestStartHonoursContext(t *testing.T) {
	script, pidFile := forkingScript(t)
	h := newHost(t, pluginhost.Settings{StartTimeout: 2 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.Cache(ctx, script)
		done <- err
	}()
	child := readPID(t, pidFile)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled start: %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a cancelled start did not return within 2 s")
	}
	waitGone(t, child, 10*time.Second, "the forked child of a cancelled start")
}

// TestPluginDiesWithHost kills a host with SIGKILL: its plugin exits
// within two seconds (the parent-death signal; the plugin's own watch of
// its parent besides).
func TestPluginDiesWithHost(t *testing.T) {
	cmd, pid := startHelperHost(t, echoBin)
	if gone(pid) {
		t.Fatalf("plugin %d not running before the kill", pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, pid, 2*time.Second, "the plugin of a SIGKILLed host")
}

// TestNotAPluginIsOneLine: /bin/true, and an executable text file the
// system cannot run, are refused as not plugins, in one line.
func TestNotAPluginIsOneLine(t *testing.T) {
	path, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1)")
	}
	text := filepath.Join(t.TempDir(), "text")
	if err := os.WriteFile(text, []byte("not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, pluginhost.Settings{StartTimeout: 5 * time.Second})
	for _, bin := range []string{path, text} {
		_, err = h.Cache(context.Background(), bin)
		var refused *pluginhost.RefusedError
		if !errors.As(err, &refused) || !errors.Is(err, pluginhost.ErrNotPlugin) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s as a plugin: %q, want a one-line *RefusedError wrapping ErrNotPlugin", bin, err)
		}
	}
}

func sum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// TestPinMismatchRefusedBeforeRunning: a binary whose sum differs from its
// pin is refused by Check and by a launch, and never runs (the script
// would create a file).
func TestPinMismatchRefusedBeforeRunning(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	script := writeScript(t, fmt.Sprintf("#!/bin/sh\ntouch %s\n", marker))
	h := newHost(t, pluginhost.Settings{StartTimeout: 5 * time.Second})
	if err := h.Pin(script, strings.Repeat("0", 64)); err != nil {
		t.Fatal(err)
	}
	if err := h.Check("cache", script); !errors.Is(err, pluginhost.ErrPinMismatch) {
		t.Errorf("Check: %v, want ErrPinMismatch", err)
	}
	_, err := h.Cache(context.Background(), script)
	var refused *pluginhost.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, pluginhost.ErrPinMismatch) || !strings.Contains(err.Error(), sum(t, script)) {
		t.Errorf("launch: %v, want a *RefusedError (ErrPinMismatch) naming the binary's sum", err)
	}
	if _, err := h.Describe(script); !errors.Is(err, pluginhost.ErrPinMismatch) {
		t.Errorf("Describe: %v, want ErrPinMismatch", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the pinned binary ran")
	}
	if err := h.Pin(script, "xyz"); err == nil {
		t.Error("Pin accepted a sum that is not 64 hex digits")
	}
}

// TestPinnedRunsUnpinnedWarnsOnce: a binary with the right pin runs
// without a warning; an unpinned one runs with one warning however often
// it is launched.
func TestPinnedRunsUnpinnedWarnsOnce(t *testing.T) {
	var log strings.Builder
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: &log})
	h := newHost(t, pluginhost.Settings{Logger: logger})
	ctx := context.Background()
	for range 2 {
		if _, err := h.Cache(ctx, echoBin); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(log.String(), "is not pinned"); n != 1 {
		t.Errorf("%d warnings for an unpinned binary launched twice, want 1:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), sum(t, echoBin)) {
		t.Errorf("the warning does not give the sum:\n%s", log.String())
	}

	log.Reset()
	pinned := newHost(t, pluginhost.Settings{Logger: logger})
	if err := pinned.Pin(echoBin, strings.ToUpper(sum(t, echoBin))); err != nil {
		t.Fatal(err)
	}
	if err := pinned.Check("cache", echoBin); err != nil {
		t.Errorf("Check of a binary matching its pin: %v", err)
	}
	if _, err := pinned.Cache(ctx, echoBin); err != nil {
		t.Fatalf("a binary matching its pin: %v", err)
	}
	if strings.Contains(log.String(), "not pinned") {
		t.Errorf("a pinned binary warned:\n%s", log.String())
	}
}

// TestInspect reads a binary without running it.
func TestInspect(t *testing.T) {
	bin, err := pluginhost.Inspect(echoBin)
	if err != nil || !bin.GoPlugin || bin.GoVersion == "" || bin.SHA256 != sum(t, echoBin) {
		t.Errorf("Inspect(echo) = %+v, %v; want a Go plugin with its sum", bin, err)
	}
	script := writeScript(t, "#!/bin/sh\nexit 0\n")
	if bin, err := pluginhost.Inspect(script); err != nil || bin.GoPlugin || bin.GoVersion != "" {
		t.Errorf("Inspect(script) = %+v, %v; want no Go build information", bin, err)
	}
}

// TestPluginExitsWhenParentGoes starts the echo plugin from a shell that
// then exits, with no parent-death signal: the plugin notices that its
// parent changed (sdk/internal/rpc) and exits within a second.
func TestPluginExitsWhenParentGoes(t *testing.T) {
	cmd := exec.Command("sh", "-c", `"$0" </dev/null >/dev/null 2>&1 & echo $!; sleep 1`, echoBin)
	cmd.Env = append(os.Environ(), plugin.Handshake.MagicCookieKey+"="+plugin.Handshake.MagicCookieValue)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		t.Fatalf("shell printed %q (%v)", line, err)
	}
	time.Sleep(300 * time.Millisecond)
	if gone(pid) {
		t.Fatal("the plugin did not start serving")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, time.Second, "a plugin whose parent exited")
}

// TestNextHostKillsOrphanedGrandchild: a plugin (a script that forks a
// long sleep, then becomes the echo plugin) runs under a host killed with
// SIGKILL. The plugin dies with its host, but its child does not (the
// parent-death signal reaches only the plugin, and no group kill ran).
// The next host to start kills it: it still carries the dead host's
// pluginhost.HostEnv.
func TestNextHostKillsOrphanedGrandchild(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs procfs")
	}
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	script := writeScript(t, fmt.Sprintf("#!/bin/sh\nsleep 300 </dev/null >/dev/null 2>&1 &\necho $! > %[1]s.tmp\nmv %[1]s.tmp %[1]s\nexec %[2]s\n", pidFile, echoBin))
	cmd, plugin := startHelperHost(t, script)
	grandchild := readPID(t, pidFile)
	defer syscall.Kill(grandchild, syscall.SIGKILL)
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, plugin, 2*time.Second, "the plugin of a SIGKILLed host")
	if gone(grandchild) {
		// Any host that starts sweeps orphans machine-wide, and go test
		// runs other packages' tests (cmd/flowrun's start many hosts) at
		// the same time: one of them may have swept this orphan already,
		// which is the behaviour under test but shows nothing here.
		t.Skip("the plugin's child was already gone (swept by a host of a test running beside this one, or it went with the host): nothing to show")
	}
	newHost(t, pluginhost.Settings{})
	waitGone(t, grandchild, 2*time.Second, "the orphaned child of a dead host's plugin, after the next host started")
}
