package bus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// strangerUID is the unprivileged uid the other-user test runs its client
// as: nobody's, on every common distribution. A uid needs no passwd entry
// to run a process, so the test creates no account.
const strangerUID = 65534

// envStranger, set by TestOtherLocalUserIsRefused, makes
// TestStrangerClient act: it is the URL of the server to attack.
const envStranger = "FLOWRUN_BUS_STRANGER_URL"

// TestOtherLocalUserIsRefused: another local user (a second uid, here
// nobody's) reaches the loopback port of a run's embedded server but can
// neither subscribe nor publish: the nats client and a raw protocol client
// are both refused at CONNECT, and the run's own subscriber on the subject
// the stranger publishes to receives nothing. It runs as root only (to
// start a process under another uid), behind FLOWRUN_INTEGRATION=1.
func TestOtherLocalUserIsRefused(t *testing.T) {
	if os.Getenv("FLOWRUN_INTEGRATION") != "1" {
		t.Skip("FLOWRUN_INTEGRATION=1 runs the other-local-user test")
	}
	if os.Geteuid() != 0 {
		t.Skip("starting a client under a second uid needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := startServer(t, ServerOptions{})
	own := connect(t, srv, "own")
	sub, err := own.Subscribe(ctx, "batches.plan", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	// The test binary, where the stranger can execute it (the build
	// directory is private to root).
	dir, err := os.MkdirTemp("", "flowrun-stranger-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	exe := filepath.Join(dir, "bus.test")
	if err := copyFile(os.Args[0], exe); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, exe} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestStrangerClient$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{envStranger + "=" + srv.ClientURL(), "HOME=" + dir, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: strangerUID, Gid: strangerUID}}
	out, err := cmd.CombinedOutput()
	t.Logf("client as uid %d:\n%s", strangerUID, out)
	if err != nil {
		t.Fatalf("the client as uid %d: %v", strangerUID, err)
	}
	for _, want := range []string{fmt.Sprintf("uid %d", strangerUID), "dial: ok", "nats client refused", "raw client refused"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the client's report lacks %q", want)
		}
	}
	select {
	case m := <-sub.Messages():
		t.Errorf("the run's subscription received %q from another user", m.Data)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestStrangerClient is the other user's side of
// TestOtherLocalUserIsRefused; without envStranger it does nothing.
func TestStrangerClient(t *testing.T) {
	url := os.Getenv(envStranger)
	if url == "" {
		t.Skip("the client side of TestOtherLocalUserIsRefused")
	}
	fmt.Printf("uid %d\n", os.Getuid())
	got, err := rawStranger(url)
	if err != nil {
		t.Fatalf("dial %s: %v (the port must be reachable for the test to mean anything)", url, err)
	}
	fmt.Println("dial: ok")
	if strings.Contains(got, "-ERR 'Authorization Violation'") && !strings.Contains(got, "MSG ") && !strings.Contains(got, "PONG") {
		fmt.Println("raw client refused:", got)
	} else {
		t.Errorf("raw client served: %q", got)
	}
	nc, err := nats.Connect(url, nats.NoReconnect(), nats.Timeout(5*time.Second))
	if errors.Is(err, nats.ErrAuthorization) {
		fmt.Println("nats client refused:", err)
		return
	}
	if nc != nil {
		nc.Close()
	}
	t.Errorf("nats client: %v, want an authorization violation", err)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
