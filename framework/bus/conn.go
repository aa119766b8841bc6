package bus

import (
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// Conn is a connection to a NATS server, embedded or external. It is safe
// for concurrent use by many publishers and subscriptions.
type Conn struct {
	nc  *nats.Conn
	log *slog.Logger

	// subs are the open subscriptions, closed (nacking what they have not
	// queued) before the connection itself, so no publisher is left waiting.
	mu   sync.Mutex
	subs map[*Subscription]struct{}

	// noResponderRetries counts publish attempts that found no subscriber;
	// tests read it to know a publisher really started before its consumer.
	noResponderRetries atomic.Int64
}

// Option configures Connect.
type Option func(*connOptions)

type connOptions struct {
	name    string
	timeout time.Duration
	log     *slog.Logger
}

// WithName names the connection as the server (and `nats server report
// connections`) shows it, e.g. "flowrun/plan".
func WithName(name string) Option { return func(o *connOptions) { o.name = name } }

// WithConnectTimeout bounds the initial dial. The default is 2 s: a dead
// URL must fail fast, not hang a run's start-up.
func WithConnectTimeout(d time.Duration) Option { return func(o *connOptions) { o.timeout = d } }

// WithLogger receives disconnects, reconnects and asynchronous NATS errors.
// Without it they are discarded.
func WithLogger(l *slog.Logger) Option { return func(o *connOptions) { o.log = l } }

// Connect dials a NATS server (nats://host:port, or a comma-separated list
// of them). It does not retry a failed first connection: an unreachable
// server is a configuration error to report now. Once connected, it
// reconnects indefinitely, because a stage waiting on a batch should ride out
// a server restart rather than abandon the run.
func Connect(serverURL string, opts ...Option) (*Conn, error) {
	o := connOptions{timeout: 2 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	log := o.log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	nopts := []nats.Option{
		nats.Timeout(o.timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.NoCallbacksAfterClientClose(),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("bus: disconnected", "error", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("bus: reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Error("bus: async error", "subject", subject, "error", err)
		}),
	}
	if o.name != "" {
		nopts = append(nopts, nats.Name(o.name))
	}
	nc, err := nats.Connect(serverURL, nopts...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect %s: %w", redactURLs(serverURL), err)
	}
	return &Conn{nc: nc, log: log, subs: map[*Subscription]struct{}{}}, nil
}

// NATS exposes the underlying connection for what the bus does not cover
// (e.g. moving bulk bytes between hosts). Messages sent through it bypass
// the bus's flow control.
func (c *Conn) NATS() *nats.Conn { return c.nc }

// Close closes every subscription on the connection (their channels close,
// messages not yet queued are refused so their publishers retry elsewhere),
// then the connection. A Publish waiting for an ack returns an error.
func (c *Conn) Close() {
	c.mu.Lock()
	subs := make([]*Subscription, 0, len(c.subs))
	for s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		_ = s.Close()
	}
	c.nc.Close()
}

func (c *Conn) track(s *Subscription) {
	c.mu.Lock()
	c.subs[s] = struct{}{}
	c.mu.Unlock()
}

func (c *Conn) untrack(s *Subscription) {
	c.mu.Lock()
	delete(c.subs, s)
	c.mu.Unlock()
}

// redactURLs hides passwords in an error message: a URL list comes from
// configuration and may carry credentials.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if u, err := url.Parse(p); err == nil && u.User != nil {
			p = u.Redacted()
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}
