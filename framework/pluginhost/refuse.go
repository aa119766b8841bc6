package pluginhost

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Why a binary is refused; a *RefusedError wraps one of them.
var (
	// ErrNotPlugin: the binary does not answer go-plugin's handshake as a
	// flowrun plugin (it exits, or prints something else, first).
	ErrNotPlugin = errors.New("not a flowrun plugin")
	// ErrWrongKind: the binary is a plugin of another kind.
	ErrWrongKind = errors.New("a plugin of another kind")
	// ErrPinMismatch: the binary's sha256 differs from the graph's pin.
	ErrPinMismatch = errors.New("sha256 differs from the pin")
)

// RefusedError reports a plugin binary the host will not use: not a
// plugin, a plugin of another kind, or not the binary the graph pinned.
// It is a fault of the graph's reference, not of the run, and reads as
// one line; the caller places it at the reference's key (cache::plugin).
type RefusedError struct {
	Kind plugin.Kind
	// Path is the binary's absolute path.
	Path string
	// Err is ErrNotPlugin, ErrWrongKind or ErrPinMismatch, with details.
	Err error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s %q: %v", noun(e.Kind), e.Path, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// refused is a reason to refuse a binary, completed by startError.
func refused(why error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", why, fmt.Sprintf(format, args...))
}

// startError turns an error from starting p into one line: go-plugin's
// own messages run to sixteen lines of advice for its users. A refusal
// becomes a *RefusedError; the tail of the plugin's stderr is added.
func (p *process) startError(err error, startTimeout time.Duration) error {
	if !errors.Is(err, ErrWrongKind) {
		first, rest, _ := strings.Cut(err.Error(), "\n")
		switch {
		case errors.Is(err, goplugin.ErrChecksumsDoNotMatch) || strings.Contains(first, "error verifying checksum"):
			// verify checked it a moment before: the file changed since.
			err = refused(ErrPinMismatch, "the binary changed between its check and its start")
		case errors.Is(err, syscall.ENOEXEC):
			err = refused(ErrNotPlugin, "the system cannot execute it (%v)", syscall.ENOEXEC)
		case strings.Contains(first, "Unrecognized remote plugin message: ") && strings.Contains(rest, "Failed to read any lines"):
			err = refused(ErrNotPlugin, "it ended without answering go-plugin's handshake")
		case strings.Contains(first, "Unrecognized remote plugin message: "):
			_, line, _ := strings.Cut(first, ": ")
			err = refused(ErrNotPlugin, "its first line of output, %q, is not go-plugin's handshake", truncate(line, 80))
		case strings.Contains(first, "plugin exited before we could connect"):
			err = refused(ErrNotPlugin, "it exited before go-plugin's handshake")
		case strings.Contains(first, "timeout while waiting for plugin to start"):
			err = fmt.Errorf("no go-plugin handshake within %v: not a flowrun plugin, or it hangs", startTimeout)
		case strings.Contains(strings.ToLower(first), "incompatible"):
			err = refused(ErrNotPlugin, "%s", first)
		case rest != "":
			err = errors.New(first)
		}
	}
	if tail := lastLine(p.stderr.String()); tail != "" {
		err = fmt.Errorf("%w (stderr: %s)", err, truncate(tail, 200))
	}
	for _, why := range []error{ErrNotPlugin, ErrWrongKind, ErrPinMismatch} {
		if errors.Is(err, why) {
			return &RefusedError{Kind: p.Kind, Path: p.Path, Err: err}
		}
	}
	return fmt.Errorf("%s plugin %q: start: %w", p.Kind, p.Path, err)
}

// quietLogger is go-plugin's logger for one client: its own warnings and
// errors (a plugin that failed to exit gracefully, a process that exited)
// are logged at debug level, since the host reports those itself in one
// line; what the plugin logs on its stderr goes to a Named logger and
// keeps its level.
type quietLogger struct{ hclog.Logger }

func (l quietLogger) Warn(msg string, args ...any)  { l.Logger.Debug(msg, args...) }
func (l quietLogger) Error(msg string, args ...any) { l.Logger.Debug(msg, args...) }
func (l quietLogger) Log(level hclog.Level, msg string, args ...any) {
	l.Logger.Log(min(level, hclog.Debug), msg, args...)
}
