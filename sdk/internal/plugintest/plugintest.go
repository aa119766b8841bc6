// Package plugintest connects the conformance suites (sdk/*/…test) to a
// plugin over real gRPC: in process, through go-plugin's test-mode Serve with
// the very ServeConfig a plugin binary uses, or as a built binary launched as
// a subprocess the way a host launches it. Suite is each kind's suite: its
// Run and RunBinary are the body of every suite's Run and RunBinary, and
// it runs the checks all kinds share (Info, UnknownOption) before the
// kind's own contract; Configured and MergeOptions serve those contracts.
//
// It is internal to sdk/ and imports the testing package; only the suites
// and the SDK's own tests use it.
package plugintest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// startTimeout bounds how long a plugin may take to come up.
const startTimeout = 30 * time.Second

// InProcess serves p (a kind's ServerPlugin) in this process with
// goplugin.Serve in test mode and the SDK's ServeConfig, so calls cross the
// same gRPC server, interceptors and status mapping as in a plugin binary.
// It returns the client half dispensed for kind; everything is torn down
// when t ends.
func InProcess(t testing.TB, kind plugin.Kind, p goplugin.Plugin) any {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reattach := make(chan *goplugin.ReattachConfig, 1)
	closed := make(chan struct{})

	cfg := rpc.ServeConfig(kind, p)
	cfg.Logger = hclog.NewNullLogger()
	cfg.Test = &goplugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed}
	go goplugin.Serve(cfg)

	var rc *goplugin.ReattachConfig
	select {
	case rc = <-reattach:
	case <-closed:
		cancel()
		t.Fatalf("serve %s plugin in process: server stopped before it was ready", kind)
	case <-time.After(startTimeout):
		cancel()
		t.Fatalf("serve %s plugin in process: not ready after %v", kind, startTimeout)
	}
	// go-plugin would otherwise watch "the plugin process" (this one) by
	// polling its pid for ever; the server's own close channel says when
	// it is gone.
	rc.ReattachFunc = func() (runner.AttachedRunner, error) { return inProcessRunner{closed}, nil }

	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		Plugins:          goplugin.PluginSet{string(kind): p},
		Reattach:         rc,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions:  plugin.GRPCDialOptions(),
		Logger:           hclog.NewNullLogger(),
	})
	proto, err := client.Client()
	if err != nil {
		cancel()
		t.Fatalf("connect to in-process %s plugin: %v", kind, err)
	}
	t.Cleanup(func() {
		// Closing the client asks the server to stop (go-plugin's
		// controller Shutdown); cancelling too would stop it twice,
		// concurrently, which go-plugin does not guard against.
		proto.Close()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			cancel()
			<-closed
		}
		cancel()
	})
	raw, err := proto.Dispense(string(kind))
	if err != nil {
		t.Fatalf("dispense %s: %v", kind, err)
	}
	return raw
}

// inProcessRunner stands for the plugin "process" of an in-process server.
type inProcessRunner struct{ closed <-chan struct{} }

func (r inProcessRunner) Wait(context.Context) error { <-r.closed; return nil }
func (r inProcessRunner) Kill(context.Context) error { return nil }
func (r inProcessRunner) ID() string                 { return "in-process" }
func (r inProcessRunner) PluginToHost(n, a string) (string, string, error) {
	return n, a, nil
}
func (r inProcessRunner) HostToPlugin(n, a string) (string, string, error) {
	return n, a, nil
}

// Binary launches the plugin binary at path as a go-plugin subprocess,
// exactly as a host does, and returns the client half dispensed for kind
// through host (the kind's HostPlugin). The process is killed when t ends;
// if t failed, the plugin's stderr is logged.
func Binary(t testing.TB, kind plugin.Kind, path string, host goplugin.Plugin) any {
	t.Helper()
	stderr := &syncBuffer{}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: plugin.VersionedPlugins(map[plugin.Kind]goplugin.Plugin{kind: host}),
		Cmd:              exec.Command(path),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions:  plugin.GRPCDialOptions(),
		Stderr:           stderr,
		SyncStderr:       stderr,
		SyncStdout:       stderr,
		Logger:           hclog.NewNullLogger(),
		StartTimeout:     startTimeout,
	})
	t.Cleanup(func() {
		client.Kill()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s plugin %s stderr:\n%s", kind, path, stderr.String())
		}
	})
	proto, err := client.Client()
	if err != nil {
		t.Fatalf("launch %s plugin %s: %v", kind, path, err)
	}
	raw, err := proto.Dispense(string(kind))
	if err != nil {
		t.Fatalf("dispense %s from %s: %v", kind, path, err)
	}
	return raw
}

// Describe runs "path describe" and checks that the binary says it is a
// plugin of kind speaking this SDK's API version, with a name. RunBinary
// has checked the binary (CheckBinary) first.
func Describe(t testing.TB, kind plugin.Kind, path string) plugin.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, rpc.DescribeArg)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", path, rpc.DescribeArg, err, stderr.String())
	}
	var info plugin.Info
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		t.Fatalf("%s %s: output is not an Info as JSON: %v\n%s", path, rpc.DescribeArg, err, stdout.String())
	}
	var errs []string
	if info.Kind != kind {
		errs = append(errs, fmt.Sprintf("kind %q, want %q", info.Kind, kind))
	}
	if info.APIVersion != plugin.APIVersion {
		errs = append(errs, fmt.Sprintf("api_version %d, want %d", info.APIVersion, plugin.APIVersion))
	}
	if strings.TrimSpace(info.Name) == "" {
		errs = append(errs, "empty name")
	}
	if len(errs) > 0 {
		t.Fatalf("%s %s: %s", path, rpc.DescribeArg, strings.Join(errs, "; "))
	}
	return info
}

// syncBuffer is a bytes.Buffer safe for go-plugin's stderr goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// CheckBinary fails t at once unless path is an existing executable file,
// so a missing binary is one clear failure rather than one per subtest.
func CheckBinary(t testing.TB, path string) {
	t.Helper()
	st, err := os.Stat(path)
	switch {
	case err != nil:
		t.Fatalf("plugin binary: %v", err)
	case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
		t.Fatalf("plugin binary %s: not an executable file", path)
	}
}
