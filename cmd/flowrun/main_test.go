package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/results"
)

// The integration tests of the CLI. Most run flowrun in this process through
// newRootCmd; those about separate processes (exit codes, a plugin killed
// mid-run, an external nats-server) use the binaries scripts/build.sh puts
// in $FLOWRUN_BIN. With FLOWRUN_INTEGRATION=1 (scripts/test.sh, CI) a
// missing binary fails the test; without it the test is skipped, so a plain
// `go test ./...` works before anything is built.

// testTmp is a directory for what tests share (binaries they build),
// removed when they end.
var testTmp string

func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv(pluginhost.BuiltinServerEnv); ok { // a run's builtin in its own process
		os.Exit(serveBuiltin(v))
	}
	var err error
	if testTmp, err = os.MkdirTemp("", "flowrun-cmd-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(testTmp)
	os.Exit(code)
}

// repoGraphs is the shipped graphs directory, seen from this package.
const repoGraphs = "../../graphs"

// integration reports whether missing binaries are failures.
func integration() bool { return os.Getenv("FLOWRUN_INTEGRATION") == "1" }

// needBins returns the absolute paths of the named binaries in
// $FLOWRUN_BIN, failing (FLOWRUN_INTEGRATION=1) or skipping the test when
// any is missing.
func needBins(tb testing.TB, names ...string) []string {
	tb.Helper()
	dir := os.Getenv("FLOWRUN_BIN")
	missing := func(why string) {
		tb.Helper()
		if integration() {
			tb.Fatalf("FLOWRUN_INTEGRATION=1 but %s (run scripts/build.sh and export FLOWRUN_BIN=$PWD/bin)", why)
		}
		tb.Skipf("%s; set FLOWRUN_BIN to the directory scripts/build.sh fills", why)
	}
	if dir == "" {
		missing("FLOWRUN_BIN is not set")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(dir, n)
		st, err := os.Stat(paths[i])
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			missing("no executable " + paths[i])
		}
	}
	return paths
}

// needBin is needBins for one binary.
func needBin(tb testing.TB, name string) string {
	tb.Helper()
	return needBins(tb, name)[0]
}

// pluginBins are every plugin binary the shipped graphs name.
var pluginBins = []string{
	"flowrun-cache-lru", "flowrun-cache-clock", "flowrun-kernel-cpu",
	"flowrun-model-logreg", "flowrun-device-cpu-dram", "flowrun-device-hbm",
}

// stagedGraphs copies the shipped graphs into a temporary directory laid out
// like the repository (graphs/ beside bin/, bin being a link to
// $FLOWRUN_BIN), so graphs that name ../bin/PLUGIN run against the binaries
// under test, from any working directory. It returns the graphs directory.
func stagedGraphs(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Dir(needBins(tb, pluginBins...)[0])
	root := tb.TempDir()
	if err := os.Symlink(bin, filepath.Join(root, "bin")); err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(root, "graphs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, src := range shippedGraphs(tb) {
		data, err := os.ReadFile(src)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// shippedGraphs lists graphs/*.yaml.
func shippedGraphs(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(repoGraphs, "*.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		tb.Fatalf("no graphs under %s", repoGraphs)
	}
	sort.Strings(files)
	return files
}

// cliResult is what one in-process flowrun invocation printed and returned.
type cliResult struct {
	stdout, stderr string
	err            error
}

// flowrun runs the CLI in this process, as main would, with args.
func flowrun(tb testing.TB, args ...string) cliResult {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	err := root.ExecuteContext(context.Background())
	return cliResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// mustFlowrun runs the CLI and fails the test if it fails.
func mustFlowrun(tb testing.TB, args ...string) cliResult {
	tb.Helper()
	r := flowrun(tb, args...)
	if r.err != nil {
		tb.Fatalf("flowrun %s: %v\nstderr:\n%s", strings.Join(args, " "), r.err, r.stderr)
	}
	return r
}

// runResults runs a graph quietly with extra args and returns its results
// file, decoded.
func runResults(tb testing.TB, graph string, args ...string) *results.Results {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "results.json")
	mustFlowrun(tb, append([]string{"run", graph, "-q", "--out", out}, args...)...)
	res, err := results.Read(out)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// demo is the shipped in-process demo graph.
var demo = filepath.Join(repoGraphs, "demo.yaml")

// startNATSServer starts bin (a nats-server) on a free loopback port for the
// test and returns its URL once it accepts connections.
func startNATSServer(tb testing.TB, bin string) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			tb.Fatalf("%s exited: %v\n%s", cmd, waitErr, logs.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "nats://" + addr
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not accepting connections on %s after 10s: %v", cmd, addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
