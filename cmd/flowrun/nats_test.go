package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/flowrun/flowrun/framework/bus/bustest"
	"github.com/flowrun/flowrun/framework/results"
)

// TestRunMovesStaleResultsAside: an earlier results file at --out is
// renamed FILE.stale when a run starts, so a run that fails leaves nothing
// under --out that could pass for its result; a run that succeeds replaces
// it and removes the stale copy.
func TestRunMovesStaleResultsAside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	old := []byte(`{"digest":"an earlier run"}` + "\n")
	if err := os.WriteFile(out, old, 0o644); err != nil {
		t.Fatal(err)
	}
	// A dead server fails the run after validation, quickly.
	r := flowrun(t, "run", demo, "-q", "--out", out, "--nats", "nats://127.0.0.1:1")
	if r.err == nil {
		t.Fatal("run against a dead NATS server succeeded")
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed run left %s in place (stat: %v)", out, err)
	}
	if got, err := os.ReadFile(out + ".stale"); err != nil || !bytes.Equal(got, old) {
		t.Errorf("%s.stale: %q, %v; want the earlier results", out, got, err)
	}
	if !strings.Contains(r.stderr, out+".stale") {
		t.Errorf("stderr does not say where the earlier results went:\n%s", r.stderr)
	}

	mustFlowrun(t, "run", demo, "-q", "--out", out)
	res, err := results.Read(out)
	if err != nil || res.Digest != wantDemoDigest(t) {
		t.Fatalf("after a good run: %v, digest %v", err, res)
	}
	if _, err := os.Stat(out + ".stale"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a good run left %s.stale (stat: %v)", out, err)
	}
}

// TestRunNATSFlagsNeedNATS: credentials flags without --nats are a usage
// error (the embedded server has an identity of its own), and a missing
// credentials file is reported before dialling.
func TestRunNATSFlagsNeedNATS(t *testing.T) {
	t.Parallel()
	r := flowrun(t, "run", demo, "-q", "--nats-creds", "/nonexistent.creds")
	var ue usageError
	if !errors.As(r.err, &ue) || !strings.Contains(r.err.Error(), "give --nats") {
		t.Errorf("--nats-creds without --nats: %v, want a usage error asking for --nats", r.err)
	}
	r = flowrun(t, "run", demo, "-q", "--nats", "nats://127.0.0.1:1", "--nats-creds", "/nonexistent.creds")
	if !errors.As(r.err, &ue) || !strings.Contains(r.err.Error(), "/nonexistent.creds") {
		t.Errorf("missing creds file: %v, want a usage error naming it", r.err)
	}
}

// natsProc is a nats-server binary run by a test on a fixed port, so that
// it can be killed and started again where its clients reconnect.
type natsProc struct {
	t    testing.TB
	bin  string
	args []string
	port int
	cmd  *exec.Cmd
	done chan struct{}
	logs bytes.Buffer
}

func freeTCPPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startNATS runs bin on a free port with args; the test's cleanup kills it.
func startNATS(t testing.TB, bin string, args ...string) *natsProc {
	t.Helper()
	p := &natsProc{t: t, bin: bin, args: args, port: freeTCPPort(t)}
	p.start()
	t.Cleanup(p.kill)
	return p
}

func (p *natsProc) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", p.port) }

func (p *natsProc) start() {
	p.t.Helper()
	args := append([]string{"-a", "127.0.0.1", "-p", fmt.Sprint(p.port)}, p.args...)
	p.cmd = exec.Command(p.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.logs, &p.logs
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(p.cmd, p.done)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-p.done:
			p.t.Fatalf("nats-server exited: %s", p.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("nats-server not listening after 10 s: %s", p.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends the server with SIGKILL (no goodbye to its clients) and waits.
func (p *natsProc) kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

// TestRunNATSAuthenticated: a nats-server that requires a token or an
// nkey user is reachable with the matching --nats flag (the run ends with
// the embedded server's digest) and refuses a run without it.
func TestRunNATSAuthenticated(t *testing.T) {
	t.Parallel()
	bin := needBin(t, "nats-server")
	dir := t.TempDir()
	base := wantDemoDigest(t)

	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(dir, "user.nk")
	conf := filepath.Join(dir, "nkey.conf")
	tokenFile := filepath.Join(dir, "token")
	op, err := bustest.NewOperator()
	if err != nil {
		t.Fatal(err)
	}
	pki, err := bustest.NewPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	creds, opConf, tlsConf := filepath.Join(dir, "user.creds"), filepath.Join(dir, "operator.conf"), filepath.Join(dir, "tls.conf")
	for f, data := range map[string]string{
		seedFile:  string(seed),
		conf:      fmt.Sprintf("authorization {\n  users = [ { nkey: %s } ]\n}\n", pub),
		tokenFile: "t0ken-from-a-file\n",
		creds:     string(op.Creds),
		opConf:    op.ServerConfig(),
		tlsConf:   pki.ServerConfig(),
	} {
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name       string
		serverArgs []string
		flags      []string
		refusal    string   // what a run with only the without flags is told
		without    []string // the flags of the refused run
	}{
		{"Token", []string{"--auth", "t0ken-from-a-file"}, []string{"--nats-token-file", tokenFile}, "authorization violation", nil},
		{"Nkey", []string{"-c", conf}, []string{"--nats-nkey", seedFile}, "authorization violation", nil},
		{"Creds", []string{"-c", opConf}, []string{"--nats-creds", creds}, "authorization violation", nil},
		// The client trusts the server but has no certificate to show: the
		// server ends the handshake ("certificate required", or the
		// connection closed under the client's first write).
		{"TLSClientCert", []string{"-c", tlsConf}, []string{"--nats-ca", pki.CA, "--nats-cert", pki.ClientCert, "--nats-key", pki.ClientKey},
			"tls", []string{"--nats-ca", pki.CA}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := startNATS(t, bin, c.serverArgs...)
			out := filepath.Join(t.TempDir(), "r.json")
			mustFlowrun(t, append([]string{"run", demo, "-q", "--out", out, "--nats", srv.url()}, c.flags...)...)
			res, err := results.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if res.Digest != base {
				t.Errorf("digest %s, embedded server %s", res.Digest, base)
			}
			r := flowrun(t, append([]string{"run", demo, "-q", "--nats", srv.url()}, c.without...)...)
			if r.err == nil || !strings.Contains(strings.ToLower(r.err.Error()), c.refusal) {
				t.Errorf("run without credentials: %v, want %q", r.err, c.refusal)
			}
		})
	}
}

// inMsgs reads the messages a nats-server has received from its
// monitoring endpoint.
func inMsgs(monitor int) int64 {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/varz", monitor))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var v struct {
		InMsgs int64 `json:"in_msgs"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&v)
	return v.InMsgs
}

// flowrunProc runs bin/flowrun (a separate process, as a user would) and
// returns its command; its stderr and exit come through the channels'
// owner, waitFlowrun.
func startFlowrun(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, chan error) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(needBin(t, "flowrun"), args...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	return cmd, &stderr, exited
}

// killMidRun waits until the run has sent at least n messages through
// srv (whose monitoring port is monitor), then kills srv with SIGKILL; it
// fails the test if flowrun ended first.
func killMidRun(t *testing.T, srv *natsProc, monitor int, n int64, exited chan error) {
	t.Helper()
	whileRunning(t, exited, fmt.Sprintf("%d messages through the server", n), func() bool { return inMsgs(monitor) >= n })
	srv.kill()
	select {
	case err := <-exited:
		t.Fatalf("flowrun ended (%v) as the server was killed, not mid-run", err)
	default:
	}
}

// TestRunNATSServerRestart: kill -9 of an external nats-server in the
// middle of a run, started again on the same port within a second: the
// run rides it out and ends with the digest of an undisturbed run.
// Killed and not started again: the run ends with exit 1 within the grace
// plus 2 s, naming the server.
func TestRunNATSServerRestart(t *testing.T) {
	if !integration() {
		t.Skip("FLOWRUN_INTEGRATION=1 runs the NATS restart tests")
	}
	t.Parallel()
	bin := needBin(t, "nats-server")
	const batches = "dataset.batches=1500"
	dir := t.TempDir()

	ref := filepath.Join(dir, "ref.json")
	plain := startNATS(t, bin)
	_, stderr, exited := startFlowrun(t, "run", demo, "-q", "--set", batches, "--out", ref, "--nats", plain.url())
	if err := waitExit(t, exited, 120*time.Second); err != nil {
		t.Fatalf("undisturbed run: %v\n%s", err, stderr)
	}
	want, err := results.Read(ref)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("BackWithinGrace", func(t *testing.T) {
		monitor := freeTCPPort(t)
		srv := startNATS(t, bin, "-m", fmt.Sprint(monitor))
		out := filepath.Join(t.TempDir(), "r.json")
		// Not -q: the run's warnings show that it saw the outage.
		_, stderr, exited := startFlowrun(t, "run", demo, "--set", batches, "--out", out,
			"--nats", srv.url(), "--nats-grace", "10s")
		killMidRun(t, srv, monitor, 200, exited)
		killed := time.Now()
		time.Sleep(500 * time.Millisecond)
		srv.start()
		t.Logf("server back, listening, %s after the kill", time.Since(killed).Round(time.Millisecond))
		if err := waitExit(t, exited, 120*time.Second); err != nil {
			t.Fatalf("run across the restart: %v\n%s", err, stderr)
		}
		got, err := results.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != want.Digest {
			t.Errorf("digest %s across the restart, %s undisturbed", got.Digest, want.Digest)
		}
		if !strings.Contains(stderr.String(), "bus: disconnected") {
			t.Errorf("the run did not see the server go (no \"bus: disconnected\"):\n%s", stderr)
		}
	})

	t.Run("GoneBeyondGrace", func(t *testing.T) {
		monitor := freeTCPPort(t)
		srv := startNATS(t, bin, "-m", fmt.Sprint(monitor))
		out := filepath.Join(t.TempDir(), "r.json")
		_, stderr, exited := startFlowrun(t, "run", demo, "-q", "--set", batches, "--out", out,
			"--nats", srv.url(), "--nats-grace", "2s")
		killMidRun(t, srv, monitor, 200, exited)
		killed := time.Now()
		err := waitExit(t, exited, 30*time.Second)
		took := time.Since(killed)
		t.Logf("exit %v %s after the kill", err, took.Round(time.Millisecond))
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("run with its server gone: %v, want exit 1\n%s", err, stderr)
		}
		if took > 4*time.Second {
			t.Errorf("exit %s after the kill, want within the grace (2 s) + 2 s", took.Round(time.Millisecond))
		}
		if !strings.Contains(stderr.String(), fmt.Sprintf("127.0.0.1:%d", srv.port)) {
			t.Errorf("the error does not name the server %s:\n%s", srv.url(), stderr)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed run wrote %s", out)
		}
	})
}

// whileRunning waits, at most 60 s, until cond holds, failing the test if
// the flowrun that exited reports on ends first.
func whileRunning(t *testing.T, exited chan error, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		select {
		case err := <-exited:
			t.Fatalf("flowrun ended (%v) before %s", err, what)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in 60 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitExit waits for a flowrun started by startFlowrun, at most d.
func waitExit(t *testing.T, exited chan error, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	select {
	case err := <-exited:
		return err
	case <-ctx.Done():
		t.Fatalf("flowrun still running after %s", d)
		return nil
	}
}

// waitExitOrDump is waitExit for a run that must not hang: past d it sends
// flowrun SIGQUIT, so that the failure shows every goroutine's stack (where
// the run waits), not only that it did.
func waitExitOrDump(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer, exited chan error, d time.Duration) error {
	t.Helper()
	select {
	case err := <-exited:
		return err
	case <-time.After(d):
	}
	_ = cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
	}
	t.Fatalf("flowrun still running after %s; its goroutines at SIGQUIT:\n%s", d, stderr)
	return nil
}

// TestRunNATSPasswordInURLWarns: a password or token in the --nats URL
// still works, with a warning that it is visible, and is never printed.
func TestRunNATSPasswordInURLWarns(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"nats://flow:s3cret@127.0.0.1:1", "nats://s3cret@127.0.0.1:1"} {
		r := flowrun(t, "run", demo, "--nats", u)
		if r.err == nil {
			t.Fatal("run against a dead server succeeded")
		}
		if !strings.Contains(r.stderr, "carries a password or token") || !strings.Contains(r.stderr, "--nats") {
			t.Errorf("%s: no warning naming --nats about the secret:\n%s", u, r.stderr)
		}
		if strings.Contains(r.stderr+r.err.Error(), "s3cret") {
			t.Errorf("the secret was printed: %v\n%s", r.err, r.stderr)
		}
	}
}

// TestRunKilledLeavesNoCurrentResults: flowrun killed with SIGKILL once
// its run has begun (nothing of it runs after the signal) still leaves no
// earlier results under --out: they were moved aside when the run began.
func TestRunKilledLeavesNoCurrentResults(t *testing.T) {
	if !integration() {
		t.Skip("FLOWRUN_INTEGRATION=1 runs the kill -9 test")
	}
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.json")
	old := []byte(`{"digest":"an earlier run"}` + "\n")
	if err := os.WriteFile(out, old, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, _, exited := startFlowrun(t, "run", demo, "-q", "--set", "dataset.batches=100000", "--out", out)
	whileRunning(t, exited, "the earlier results moved aside", func() bool {
		_, err := os.Stat(out + ".stale")
		return err == nil
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	if err := waitExit(t, exited, 30*time.Second); err == nil {
		t.Fatal("the run finished before it was killed")
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after kill -9, %s is there (stat: %v): an earlier run's results would look current", out, err)
	}
	if got, err := os.ReadFile(out + ".stale"); err != nil || !bytes.Equal(got, old) {
		t.Errorf("%s.stale: %q, %v; want the earlier results", out, got, err)
	}
}

// varz reads one integer field of a nats-server's /varz.
func varz(monitor int, field string) int64 {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/varz", monitor))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var v map[string]any
	if json.NewDecoder(resp.Body).Decode(&v) != nil {
		return -1
	}
	n, _ := v[field].(float64)
	return int64(n)
}

// TestRunNATSClusterNodeKilled: a run on a 3-node nats-server cluster
// (loopback, routes between every pair), given all three URLs: the node
// it is connected to is killed with SIGKILL mid-run and not started again;
// the run moves to another node and ends with the digest of a run on the
// embedded server.
func TestRunNATSClusterNodeKilled(t *testing.T) {
	if !integration() {
		t.Skip("FLOWRUN_INTEGRATION=1 runs the NATS cluster test")
	}
	t.Parallel()
	bin := needBin(t, "nats-server")
	const batches = "dataset.batches=1500"
	ref := filepath.Join(t.TempDir(), "ref.json")
	_, stderr, exited := startFlowrun(t, "run", demo, "-q", "--set", batches, "--out", ref)
	if err := waitExit(t, exited, 120*time.Second); err != nil {
		t.Fatalf("run on the embedded server: %v\n%s", err, stderr)
	}
	want, err := results.Read(ref)
	if err != nil {
		t.Fatal(err)
	}

	routes := []int{freeTCPPort(t), freeTCPPort(t), freeTCPPort(t)}
	var all []string
	for _, r := range routes {
		all = append(all, fmt.Sprintf("nats://127.0.0.1:%d", r))
	}
	var nodes []*natsProc
	var monitors []int
	var urls []string
	for i, r := range routes {
		m := freeTCPPort(t)
		n := startNATS(t, bin, "-m", fmt.Sprint(m), "--cluster_name", "flowrun-test", "--name", fmt.Sprintf("n%d", i),
			"--cluster", fmt.Sprintf("nats://127.0.0.1:%d", r), "--routes", strings.Join(all, ","))
		nodes, monitors, urls = append(nodes, n), append(monitors, m), append(urls, n.url())
	}
	mon := func(i int) int { return monitors[i] }
	deadline := time.Now().Add(30 * time.Second)
	for i := range nodes {
		for varz(mon(i), "routes") < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("node %d has %d routes after 30 s, want 2", i, varz(mon(i), "routes"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	out := filepath.Join(t.TempDir(), "r.json")
	cmd, stderr, exited := startFlowrun(t, "run", demo, "--set", batches, "--out", out,
		"--nats", strings.Join(urls, ","), "--nats-grace", "10s")
	serving := -1
	whileRunning(t, exited, "200 messages through one node", func() bool {
		for i := range nodes {
			if varz(mon(i), "connections") > 0 && varz(mon(i), "in_msgs") >= 200 {
				serving = i
				return true
			}
		}
		return false
	})
	nodes[serving].kill()
	t.Logf("killed node %d, the run's", serving)
	if err := waitExitOrDump(t, cmd, stderr, exited, 120*time.Second); err != nil {
		t.Fatalf("run across the node's death: %v\n%s", err, stderr)
	}
	got, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != want.Digest {
		t.Errorf("digest %s with a node killed, %s on the embedded server", got.Digest, want.Digest)
	}
	if !strings.Contains(stderr.String(), "bus: disconnected") {
		t.Errorf("the run did not see its node go (no \"bus: disconnected\"):\n%s", stderr)
	}
	// What the bus sent again, and why: "no ack in time" is a request the
	// new node routed to the killed node's interest.
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "bus: sending again") || strings.Contains(line, "bus: no ack") {
			t.Log(line)
		}
	}
}
