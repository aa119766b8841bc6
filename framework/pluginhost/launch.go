package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Process names a plugin subprocess.
type Process struct {
	Kind plugin.Kind
	// Name is the base name of Path, as in span names.
	Name string
	// Path is the binary's absolute path.
	Path string
	Pid  int
}

func (p Process) String() string {
	return fmt.Sprintf("%s plugin %q (%s, pid %d)", p.Kind, p.Name, p.Path, p.Pid)
}

// ExitError reports a plugin subprocess that exited while the host was
// still using it.
type ExitError struct {
	Process
	// State is how the process ended ("exit status 2", "signal: killed").
	State string
	// Stderr is the tail of what the process wrote to its stderr: usually
	// the panic or the last log lines.
	Stderr string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s exited unexpectedly", e.Process)
	if e.State != "" {
		msg += " (" + e.State + ")"
	}
	if tail := lastLine(e.Stderr); tail != "" {
		msg += ": " + tail
	}
	return msg
}

// process is a launched plugin subprocess.
type process struct {
	Process
	client *goplugin.Client
	cmd    *exec.Cmd
	stderr *tailWriter
}

// hostPlugins is the plugin set a host dispenses from: every kind. A binary
// serves one; dispensing another kind yields a client whose calls answer
// "unsupported", which launch turns into a clear error.
func hostPlugins() map[int]goplugin.PluginSet {
	return plugin.VersionedPlugins(map[plugin.Kind]goplugin.Plugin{
		plugin.KindCache:  cache.HostPlugin(),
		plugin.KindKernel: kernel.HostPlugin(),
		plugin.KindModel:  model.HostPlugin(),
		plugin.KindDevice: device.HostPlugin(),
	})
}

// launch starts the binary of r (for a builtin, the host's BuiltinServer
// serving it), dispenses kind from it, checks that it
// says it is a plugin of that kind, and starts watching it. The binary is
// checked against its pin, if the graph gave one, right before it runs
// (go-plugin's SecureConfig); it runs in a process group of its own that
// dies with the host (sysProcAttr).
func (h *Host) launch(ctx context.Context, kind plugin.Kind, r Ref) (any, *process, error) {
	// go-plugin appends the host's own environment after these entries.
	env := []string{hostEnv()}
	var path string
	var secure *goplugin.SecureConfig
	var err error
	if r.Builtin { // ownprocess.go: the host's own program serves it, unpinned
		path, env = h.server.Path, append(env, serverEnv(kind, r.Name))
	} else if path, err = filepath.Abs(r.Path); err != nil {
		return nil, nil, fmt.Errorf("%s plugin %q: %w", kind, r.Path, err)
	} else if secure, err = h.verify(kind, path); err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(path)
	cmd.SysProcAttr = sysProcAttr()
	cmd.Env = env
	p := &process{
		Process: Process{Kind: kind, Name: r.Name, Path: path},
		cmd:     cmd,
		stderr:  &tailWriter{max: 4096},
	}
	p.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: hostPlugins(),
		Cmd:              p.cmd,
		SecureConfig:     secure,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions:  plugin.GRPCDialOptions(),
		Stderr:           p.stderr,
		SyncStdout:       h.stderr,
		SyncStderr:       io.MultiWriter(h.stderr, p.stderr),
		Logger:           quietLogger{h.logger.Named(string(kind)).Named(r.Name)},
		StartTimeout:     h.startTimeout,
	})
	fail := func(err error) (any, *process, error) {
		if err := p.stop(false); err != nil {
			h.logger.Warn(err.Error())
		}
		return nil, nil, p.startError(err, h.startTimeout)
	}

	proto, err := p.start(ctx, h.logger)
	if errors.Is(err, errStartAbandoned) {
		return nil, nil, fmt.Errorf("%s plugin %q: %w", kind, path, err)
	}
	if err != nil {
		return fail(err)
	}
	if rc := p.client.ReattachConfig(); rc != nil {
		p.Pid = rc.Pid
	}
	if err := applyNice(ctx, p); err != nil { // nice.go: WithNice
		return fail(err)
	}
	raw, err := proto.Dispense(string(kind))
	if err != nil {
		return fail(fmt.Errorf("dispense: %w", err))
	}
	base, ok := raw.(plugin.Base)
	if !ok {
		return fail(fmt.Errorf("dispensed %T", raw))
	}
	infoCtx, cancel := context.WithTimeout(ctx, h.startTimeout)
	info, err := base.Info(infoCtx)
	cancel()
	switch {
	case errors.Is(err, plugin.ErrUnsupported):
		return fail(refused(ErrWrongKind, "the binary does not serve a %s plugin", kind))
	case err != nil:
		return fail(fmt.Errorf("info: %w", err))
	case info.Kind != kind:
		return fail(refused(ErrWrongKind, "the binary is a %s plugin, not a %s plugin", info.Kind, kind))
	}

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		p.stop(true)
		return nil, nil, ErrClosed
	}
	h.procs = append(h.procs, p)
	h.watchers.Add(1)
	h.mu.Unlock()
	go h.watch(p)
	h.logger.Debug("plugin started", "kind", kind, "name", r.Name, "path", path, "pid", p.Pid, "version", info.Version)
	return raw, p, nil
}

// start runs go-plugin's start-up (the process and its handshake, bounded
// by the start timeout) and gives up when ctx ends first. go-plugin's
// start cannot be interrupted, so then the process is stopped once it
// returns, in the background.
func (p *process) start(ctx context.Context, log hclog.Logger) (goplugin.ClientProtocol, error) {
	type started struct {
		proto goplugin.ClientProtocol
		err   error
	}
	ch := make(chan started, 1)
	go func() {
		proto, err := p.client.Client()
		ch <- started{proto, err}
	}()
	select {
	case s := <-ch:
		return s.proto, s.err
	case <-ctx.Done():
		go func() {
			<-ch
			if err := p.stop(false); err != nil {
				log.Warn(err.Error())
			}
		}()
		return nil, fmt.Errorf("%w: %w", errStartAbandoned, ctx.Err())
	}
}

// errStartAbandoned is start's error when its context ended first: the
// process is stopped in the background, not by the caller.
var errStartAbandoned = errors.New("start abandoned")

// Stopping a plugin: stopGrace is how long it has to exit after its
// connection closes (go-plugin itself waits 2 s, then kills the process
// it started); killWait is how long its process group has to go after a
// SIGKILL. Neither is ever waited twice, so stop returns within their sum.
const (
	stopGrace = 3 * time.Second
	killWait  = 2 * time.Second
)

// stop ends the plugin and every process of its group, within stopGrace
// plus killWait. Gracefully, go-plugin first closes the connection and
// lets the plugin exit; else, and when that takes too long, the group is
// killed. go-plugin's Kill waits until the plugin's stdout and stderr
// close, which a forked child holding them open would delay forever: the
// group kill ends that child, and if even that does not free them (a
// child that left the group), stop gives up waiting and says so.
func (p *process) stop(graceful bool) error {
	pid := p.pid()
	if !graceful {
		killGroup(pid)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.client.Kill()
	}()
	if graceful {
		select {
		case <-done:
			killGroup(pid) // what the plugin forked and left behind
			return nil
		case <-time.After(stopGrace):
		}
		killGroup(pid)
	}
	select {
	case <-done:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("%s: output still held open %v after SIGKILL to its process group (by a child that left the group); not waiting for it", p.Process, killWait)
	}
}

// pid is the plugin's process id once go-plugin started it, else 0. It is
// read after start returned, which orders it after the process started.
func (p *process) pid() int {
	if p.Pid > 0 {
		return p.Pid
	}
	if p.cmd.Process != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// watch reports p on Failures if it exits before the host closes.
// go-plugin only exposes Exited, so it polls.
func (h *Host) watch(p *process) {
	defer h.watchers.Done()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-tick.C:
		}
		if !p.client.Exited() {
			continue
		}
		// Exited is set under go-plugin's lock after cmd.Wait returned, so
		// ProcessState is complete.
		err := &ExitError{Process: p.Process, Stderr: p.stderr.String()}
		if st := p.cmd.ProcessState; st != nil {
			err.State = st.String()
		}
		select {
		case <-h.done:
			return // closing: the exit is ours
		default:
		}
		h.logger.Error("plugin exited unexpectedly", "kind", p.Kind, "name", p.Name, "path", p.Path, "pid", p.Pid, "state", err.State)
		select {
		case h.failures <- err:
		case <-h.done:
		}
		return
	}
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// lastLine is the last non-blank line of s, for one-line error messages.
// A Go panic is reported by its first line instead, which says what
// panicked.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}
