package pluginhost_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/pluginhost/internal/echo"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// echoBin is the echo plugin binary, built once by TestMain.
var echoBin string

func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(pluginhost.BuiltinServerEnv); ok { // TestWithOwnProcess's builtin server
		cache.Serve(echo.New())
		os.Exit(0)
	}
	if path := os.Getenv(helperHostEnv); path != "" {
		helperHost(path) // does not return
	}
	dir, err := os.MkdirTemp("", "pluginhost-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	echoBin = filepath.Join(dir, "echo")
	if out, err := exec.Command("go", "build", "-o", echoBin, "./testdata/echo").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build test plugin: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func newHost(t *testing.T, set pluginhost.Settings) *pluginhost.Host {
	t.Helper()
	if set.Builtins.Caches == nil {
		set.Builtins.Caches = map[string]func() cache.Cache{"echo": echo.New}
	}
	h, err := pluginhost.New(set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func TestBuiltinAndSubprocessAnswerAlike(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, pluginhost.Settings{})
	for _, ref := range []string{"builtin:echo", echoBin} {
		t.Run(filepath.Base(ref), func(t *testing.T) {
			c, err := h.Cache(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			info, err := c.Info(ctx)
			if err != nil || info.Name != "echo" || info.Kind != plugin.KindCache {
				t.Fatalf("Info = %+v, %v", info, err)
			}
			if _, err := c.Plan(ctx, &cache.PlanRequest{Seq: 1}); !errors.Is(err, plugin.ErrNotConfigured) {
				t.Errorf("Plan before Configure: %v, want ErrNotConfigured", err)
			}
			if err := c.Configure(ctx, plugin.Setup{Options: []byte(`{"capacity": 8}`)}); err != nil {
				t.Fatal(err)
			}
			res, err := c.Plan(ctx, &cache.PlanRequest{Seq: 1, TableOffsets: []int64{0, 3, 5}})
			if err != nil || len(res.Tables) != 2 || res.Tables[1].Misses != 2 {
				t.Fatalf("Plan = %+v, %v", res, err)
			}
			_, err = c.Plan(ctx, &cache.PlanRequest{Seq: echo.CursedSeq})
			if !errors.Is(err, plugin.ErrInvalidRequest) || err.Error() != "echo: batch 666 is cursed: invalid request" {
				t.Errorf("cursed Plan: %v, want the plugin's ErrInvalidRequest with its message", err)
			}
		})
	}
}

func TestCallsAreChildSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := newHost(t, pluginhost.Settings{TracerProvider: tp})
	for _, ref := range []string{"builtin:echo", echoBin} {
		t.Run(filepath.Base(ref), func(t *testing.T) {
			c, err := h.Cache(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			ctx, stage := tp.Tracer("test").Start(context.Background(), "stage/plan")
			info, err := c.Info(ctx)
			stage.End()
			if err != nil {
				t.Fatal(err)
			}
			var call sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "cache/echo.Info" && s.Parent().SpanID() == stage.SpanContext().SpanID() {
					call = s
				}
			}
			if call == nil {
				t.Fatalf("no span cache/echo.Info under the stage span; spans: %v", names(rec.Ended()))
			}
			want := fmt.Sprintf("trace=%s span=%s", call.SpanContext().TraceID(), call.SpanContext().SpanID())
			if info.Description != want {
				t.Errorf("plugin saw %q, want the call span's context %q", info.Description, want)
			}
		})
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func TestKilledPluginIsReported(t *testing.T) {
	h := newHost(t, pluginhost.Settings{})
	if _, err := h.Cache(context.Background(), echoBin); err != nil {
		t.Fatal(err)
	}
	procs := h.Processes()
	if len(procs) != 1 || procs[0].Pid <= 0 || procs[0].Kind != plugin.KindCache || procs[0].Name != "echo" {
		t.Fatalf("Processes() = %+v", procs)
	}
	pid := procs[0].Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := failure(t, h)
	var exit *pluginhost.ExitError
	if !errors.As(err, &exit) || exit.Pid != pid || exit.Kind != plugin.KindCache || exit.Path != echoBin {
		t.Fatalf("failure %v (%#v), want an ExitError for pid %d", err, err, pid)
	}
	for _, want := range []string{"cache plugin", `"echo"`, fmt.Sprintf("pid %d", pid), "killed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("failure %q does not mention %q", err, want)
		}
	}
	if len(h.Processes()) != 0 {
		t.Errorf("Processes() still lists %v", h.Processes())
	}
}

func TestPluginExitDuringCallIsReported(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, pluginhost.Settings{})
	c, err := h.Cache(ctx, echoBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Configure(ctx, plugin.Setup{Options: []byte(`{"panic_on_plan": true}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Plan(ctx, &cache.PlanRequest{Seq: 1}); err == nil {
		t.Fatal("Plan on a plugin that exits returned no error")
	}
	err = failure(t, h)
	var exit *pluginhost.ExitError
	if !errors.As(err, &exit) || exit.State != "exit status 2" || !strings.Contains(exit.Stderr, "goroutine") {
		t.Fatalf("failure %v (%#v), want exit status 2 and the panic's stack", err, err)
	}
	if !strings.Contains(err.Error(), "panic: echo: panicking as asked") {
		t.Errorf("failure %q does not say what panicked", err)
	}
}

// failure waits the one second a crash may take to be reported.
func failure(t *testing.T, h *pluginhost.Host) error {
	t.Helper()
	select {
	case err := <-h.Failures():
		return err
	case <-time.After(time.Second):
		t.Fatal("no failure reported within a second")
		return nil
	}
}

func TestCloseIsNotAFailure(t *testing.T) {
	h, err := pluginhost.New(pluginhost.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := h.Cache(context.Background(), echoBin); err != nil {
			t.Fatal(err)
		}
	}
	pids := h.Processes()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for err := range h.Failures() {
		t.Errorf("Close reported %v", err)
	}
	for _, p := range pids {
		if syscall.Kill(p.Pid, 0) == nil {
			// A zombie is gone for our purposes only once reaped; go-plugin
			// reaps in Kill, so the pid must be free.
			t.Errorf("pid %d still runs after Close", p.Pid)
		}
	}
	if _, err := h.Cache(context.Background(), "builtin:echo"); !errors.Is(err, pluginhost.ErrClosed) {
		t.Errorf("resolve after Close: %v, want ErrClosed", err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWrongKindIsRefused(t *testing.T) {
	h := newHost(t, pluginhost.Settings{})
	_, err := h.Kernel(context.Background(), echoBin)
	if err == nil || !strings.Contains(err.Error(), "does not serve a kernel plugin") {
		t.Fatalf("kernel from a cache binary: %v", err)
	}
	if len(h.Processes()) != 0 {
		t.Errorf("refused plugin still runs: %v", h.Processes())
	}
}

func TestNotAPluginFailsToStart(t *testing.T) {
	script := writeScript(t, "#!/bin/sh\necho 'I am not a plugin' >&2\nexit 1\n")
	h := newHost(t, pluginhost.Settings{StartTimeout: 5 * time.Second})
	_, err := h.Cache(context.Background(), script)
	if err == nil || !strings.Contains(err.Error(), "I am not a plugin") {
		t.Fatalf("launching a non-plugin: %v, want an error with its stderr", err)
	}
}

func TestCheck(t *testing.T) {
	h := newHost(t, pluginhost.Settings{})
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		kind    plugin.Kind
		ref     string
		wantErr string
	}{
		{plugin.KindCache, "builtin:echo", ""},
		{plugin.KindCache, echoBin, ""},
		{plugin.KindCache, "builtin:nope", `no such builtin (builtins: echo)`},
		{plugin.KindKernel, "builtin:echo", "no such builtin"},
		{plugin.KindCache, "builtin:", "no builtin name"},
		{plugin.KindCache, "", "empty plugin reference"},
		{plugin.KindCache, filepath.Join(dir, "missing"), "no such file"},
		{plugin.KindCache, dir, "not a regular file"},
		{plugin.KindCache, plain, "not executable"},
		{plugin.Kind("gpu"), "builtin:echo", "unknown plugin kind"},
	}
	for _, tc := range cases {
		err := h.Check(tc.kind, tc.ref)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Check(%s, %q) = %v", tc.kind, tc.ref, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Check(%s, %q) = %v, want an error containing %q", tc.kind, tc.ref, err, tc.wantErr)
		}
	}
	if len(h.Processes()) != 0 {
		t.Error("Check launched something")
	}
}

func TestDescribe(t *testing.T) {
	h := newHost(t, pluginhost.Settings{DescribeTimeout: 500 * time.Millisecond})
	info, err := h.Describe(echoBin)
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != plugin.KindCache || info.Name != "echo" || info.APIVersion != plugin.APIVersion || info.Version != "0.0.1" {
		t.Errorf("Describe = %+v", info)
	}

	cases := map[string]struct{ script, wantErr string }{
		"NotJSON":      {"#!/bin/sh\necho hello\n", "not a plugin description"},
		"Fails":        {"#!/bin/sh\necho 'bad flag' >&2\nexit 2\n", "bad flag"},
		"Hangs":        {"#!/bin/sh\nexec sleep 10\n", "no answer within"},
		"UnknownKind":  {"#!/bin/sh\necho '{\"kind\":\"gpu\",\"name\":\"x\",\"api_version\":1}'\n", `unknown plugin kind "gpu"`},
		"OtherVersion": {"#!/bin/sh\necho '{\"kind\":\"cache\",\"name\":\"x\",\"api_version\":99}'\n", "API version 99"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := h.Describe(writeScript(t, tc.script))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Describe: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewSweepsStaleRegions(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	dead := cmd.ProcessState.Pid()
	stale := filepath.Join(region.Dir(), fmt.Sprintf("%s%d-1-pluginhost-test", region.Prefix, dead))
	if err := os.WriteFile(stale, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(stale) })
	newHost(t, pluginhost.Settings{})
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale region %s of dead pid %d survived New: %v", stale, dead, err)
	}
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
