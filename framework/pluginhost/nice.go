package pluginhost

import (
	"context"
	"fmt"
)

// niceKey carries the niceness WithNice asks for.
type niceKey struct{}

// WithNice returns ctx asking that a plugin process launched with it (a
// binary: a builtin runs in the host's process and is not affected) run
// at niceness n, 0 (the host's) to 19 (only idle CPU): a caller whose
// plugins work beside the run's critical path, such as shadow cache
// policies, so that the kernel gives them only the time the run leaves.
// The process is reniced once it has answered its handshake, every thread
// it has then; threads it starts later inherit the niceness.
func WithNice(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, niceKey{}, n)
}

// niceOf is the niceness ctx asks for, if any.
func niceOf(ctx context.Context) (int, bool) {
	n, ok := ctx.Value(niceKey{}).(int)
	return n, ok
}

// applyNice renices p as ctx asks (WithNice); nothing when it asks nothing.
func applyNice(ctx context.Context, p *process) error {
	n, ok := niceOf(ctx)
	if !ok {
		return nil
	}
	if n < 0 || n > 19 {
		return fmt.Errorf("niceness %d: want 0 to 19", n)
	}
	if err := renice(p.Pid, n); err != nil {
		return fmt.Errorf("renice pid %d to %d: %w", p.Pid, n, err)
	}
	return nil
}
