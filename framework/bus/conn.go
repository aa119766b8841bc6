package bus

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
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
	// resent counts requests sent again after a reconnect.
	resent atomic.Int64

	// nonce and sent make every Publish's message id unique across the
	// connections of a run (HeaderMsgID).
	nonce string
	sent  atomic.Uint64

	// reconnected is closed and replaced at every reconnect, to wake the
	// publishers whose request or reply the outage may have lost.
	reconnected chan struct{}
	// lost is closed, with lostErr set, once the server has been
	// unreachable for longer than the grace; the connection is then of no
	// further use to the run.
	lost    chan struct{}
	lostErr error
	grace   time.Duration
	outage  *time.Timer
	url     string
	// lastReconnect is when the connection last reconnected (UnixNano, 0
	// never); for a grace after it a request unanswered for settle is sent
	// again (resendAfter). Atomic: every Publish reads it.
	lastReconnect atomic.Int64
	settle        time.Duration
}

// Option configures Connect.
type Option func(*connOptions)

type connOptions struct {
	name    string
	timeout time.Duration
	grace   time.Duration
	log     *slog.Logger
	// nats are extra nats.go options (credentials, TLS); err is a bad
	// option found while applying them, reported before dialling.
	nats []nats.Option
	err  error
}

// DefaultGrace is how long a connection waits for its server to come back
// after losing it before it gives up (Lost).
const DefaultGrace = 10 * time.Second

// ErrServerLost is the cause Lost reports: the server was unreachable for
// longer than the grace.
var ErrServerLost = errors.New("bus: NATS server lost")

// WithName names the connection as the server (and `nats server report
// connections`) shows it, e.g. "flowrun/plan".
func WithName(name string) Option { return func(o *connOptions) { o.name = name } }

// WithConnectTimeout bounds the initial dial. The default is 2 s: a dead
// URL must fail fast, not hang a run's start-up.
func WithConnectTimeout(d time.Duration) Option { return func(o *connOptions) { o.timeout = d } }

// WithGrace sets how long the connection rides out an unreachable server
// (a restart) before it reports the server lost: Lost is closed, and every
// Publish waiting on the connection returns ErrServerLost. Default (and
// for d ≤ 0) DefaultGrace.
func WithGrace(d time.Duration) Option { return func(o *connOptions) { o.grace = d } }

// WithLogger receives disconnects, reconnects and asynchronous NATS errors.
// Without it they are discarded.
func WithLogger(l *slog.Logger) Option { return func(o *connOptions) { o.log = l } }

// Connect dials a NATS server (nats://host:port, or a comma-separated list
// of them). It does not retry a failed first connection: an unreachable
// server is a configuration error to report now. Once connected, it
// reconnects for the grace (WithGrace), because a stage waiting on a batch
// should ride out a server restart rather than abandon the run; a request
// whose request or reply the outage may have lost is sent again
// (Publish), and a server gone for longer than the grace ends the
// connection's use (Lost).
func Connect(serverURL string, opts ...Option) (*Conn, error) {
	o := connOptions{timeout: 2 * time.Second, grace: DefaultGrace}
	for _, opt := range opts {
		opt(&o)
	}
	if o.grace <= 0 {
		o.grace = DefaultGrace
	}
	if o.err != nil {
		return nil, fmt.Errorf("bus: connect %s: %w", redactURLs(serverURL), o.err)
	}
	log := o.log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &Conn{
		log: log, subs: map[*Subscription]struct{}{}, nonce: newNonce(),
		reconnected: make(chan struct{}), lost: make(chan struct{}), grace: o.grace, url: redactURLs(serverURL),
		settle: settleFor(o.grace),
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
			c.disconnected()
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("bus: reconnected", "url", nc.ConnectedUrlRedacted())
			c.reconnect()
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
	nopts = append(nopts, o.nats...)
	nc, err := nats.Connect(serverURL, nopts...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect %s: %w", redactURLs(serverURL), err)
	}
	c.nc = nc
	return c, nil
}

// settleFor is the settle interval of a grace: a tenth of it, between
// 50 ms and 1 s. Short enough that a request lost just after a reconnect
// costs the run little; long enough that a healthy consumer's ack, whose
// wait it ends, is rarely that slow.
func settleFor(grace time.Duration) time.Duration {
	return min(max(grace/10, 50*time.Millisecond), time.Second)
}

func newNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// disconnected starts the grace: unless the server is back before it ends,
// the connection is lost.
func (c *Conn) disconnected() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.outage != nil || c.lostErr != nil {
		return
	}
	c.outage = time.AfterFunc(c.grace, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.outage == nil || c.lostErr != nil {
			return
		}
		c.lostErr = fmt.Errorf("%w: %s unreachable for %s (the grace)", ErrServerLost, c.url, c.grace)
		close(c.lost)
		c.log.Error("bus: server lost", "url", c.url, "grace", c.grace)
	})
}

// reconnect ends the grace and wakes every publisher waiting for a reply.
func (c *Conn) reconnect() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.outage != nil {
		c.outage.Stop()
		c.outage = nil
	}
	c.lastReconnect.Store(time.Now().UnixNano())
	close(c.reconnected)
	c.reconnected = make(chan struct{})
}

// reconnects is the channel the next reconnect closes.
func (c *Conn) reconnects() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconnected
}

// Lost is closed once the server has been unreachable for longer than the
// grace; LostErr then says which server and for how long. A run selects on
// it beside its own completion, so that a server gone for good ends the
// run with an error instead of a wait.
func (c *Conn) Lost() <-chan struct{} { return c.lost }

// LostErr is the reason Lost was closed (wrapping ErrServerLost), nil
// before.
func (c *Conn) LostErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lostErr
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
	c.mu.Lock()
	if c.outage != nil {
		c.outage.Stop()
		c.outage = nil
	}
	c.mu.Unlock()
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

// redactURLs hides passwords and tokens in an error message: a URL list
// comes from configuration and may carry credentials. A user without a
// password is a token to nats.go, so it is hidden too.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if u, err := url.Parse(p); err == nil && u.User != nil {
			if _, ok := u.User.Password(); !ok {
				u.User = url.User("xxxxx")
			}
			p = u.Redacted()
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}

// RedactURLs is a server URL list with any password or token replaced,
// for messages that print it.
func RedactURLs(list string) string { return redactURLs(list) }
