package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultQueue is the queue group subscriptions join unless told otherwise.
// A queue group makes NATS hand each message to exactly one member: with
// request/reply, several plain subscribers would each receive (and process)
// the batch while the publisher only sees the first ack.
const DefaultQueue = "flowrun"

// SubscribeOption configures Subscribe.
type SubscribeOption func(*subOptions)

type subOptions struct {
	queue        string
	drainTimeout time.Duration
}

// WithQueue sets the queue group. Replicas of one stage share a group and
// split the subject's messages (order then holds only per replica).
func WithQueue(name string) SubscribeOption { return func(o *subOptions) { o.queue = name } }

// WithDrainTimeout bounds how long Close waits for in-transit messages to
// be refused (nacked). Default 5 s.
func WithDrainTimeout(d time.Duration) SubscribeOption {
	return func(o *subOptions) { o.drainTimeout = d }
}

// Subscription receives a subject's messages into a bounded queue.
type Subscription struct {
	conn    *Conn
	subject string
	sub     *nats.Subscription
	ch      chan *Message
	ctx     context.Context
	cancel  context.CancelFunc
	drain   time.Duration

	// mu and senders keep ch open while a handler may still send on it.
	mu      sync.Mutex
	closed  bool
	senders sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	// seen are the ids of the last messages queued (HeaderMsgID), oldest
	// first in order, so that one sent again after a reconnect is acked
	// without being queued twice. Only handle touches them.
	seen  map[string]struct{}
	order []string
}

// seenIDs bounds the ids a subscription remembers. A message is sent again
// only while its publisher waits for its ack, and a publisher waits for
// one message at a time, so this needs to exceed the publishers of one
// subject, not the messages.
const seenIDs = 4096

// Subscribe receives subject's messages. credits is the capacity of the
// local queue: at most credits messages are acknowledged and not yet taken
// by the consumer. With credits 0 a message is acknowledged only when the
// consumer receives it (a rendezvous).
//
// The subscription ends when ctx ends or Close is called; Messages is then
// closed after anything already queued (acked, still readable).
// Subscribe returns once the server knows the subscription, so a Publish
// issued afterwards finds it.
func (c *Conn) Subscribe(ctx context.Context, subject string, credits int, opts ...SubscribeOption) (*Subscription, error) {
	if credits < 0 {
		return nil, fmt.Errorf("bus: subscribe %s: credits %d: must be ≥ 0", subject, credits)
	}
	o := subOptions{queue: DefaultQueue, drainTimeout: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &Subscription{
		conn:    c,
		subject: subject,
		ch:      make(chan *Message, credits),
		ctx:     sctx,
		cancel:  cancel,
		drain:   o.drainTimeout,
		seen:    make(map[string]struct{}),
	}
	sub, err := c.nc.QueueSubscribe(subject, o.queue, s.handle)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("bus: subscribe %s: %w", subject, err)
	}
	// The bus bounds what can be pending here (one message per blocked
	// publisher, and the copies its resends add: one per settle interval
	// after a reconnect, then one per grace doubling to one per eight), so
	// the client must never drop on its own limits: a dropped
	// request would leave its publisher waiting for an ack forever.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		cancel()
		return nil, fmt.Errorf("bus: subscribe %s: %w", subject, err)
	}
	s.sub = sub
	fctx, fcancel := context.WithTimeout(sctx, 5*time.Second)
	err = c.nc.FlushWithContext(fctx)
	fcancel()
	if err != nil {
		_ = sub.Unsubscribe()
		cancel()
		return nil, fmt.Errorf("bus: subscribe %s: %w", subject, err)
	}
	c.track(s)
	go func() {
		<-sctx.Done()
		_ = s.Close()
	}()
	return s, nil
}

// handle runs on the NATS subscription's delivery goroutine, one message at
// a time. Blocking here while the queue is full is the back-pressure: the
// publisher's request stays unanswered until there is room.
func (s *Subscription) handle(m *nats.Msg) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		reply(m, ackRefused)
		return
	}
	s.senders.Add(1)
	s.mu.Unlock()
	defer s.senders.Done()

	// Once the subscription is ending, refuse rather than queue, so the
	// publisher retries with whoever subscribes next.
	if s.ctx.Err() != nil {
		reply(m, ackRefused)
		return
	}
	id := m.Header.Get(HeaderMsgID)
	if _, dup := s.seen[id]; dup && id != "" {
		// Queued already; its ack was lost in an outage.
		reply(m, ackQueued)
		return
	}
	msg := &Message{Subject: m.Subject, Header: m.Header, Data: m.Data}
	select {
	case s.ch <- msg:
		s.remember(id)
		reply(m, ackQueued)
	case <-s.ctx.Done():
		reply(m, ackRefused)
	}
}

// remember records a queued message's id, forgetting the oldest beyond
// seenIDs.
func (s *Subscription) remember(id string) {
	if id == "" {
		return
	}
	if len(s.order) == seenIDs {
		delete(s.seen, s.order[0])
		s.order = s.order[1:]
	}
	s.seen[id] = struct{}{}
	s.order = append(s.order, id)
}

// reply answers a request. A message without a reply subject came from a
// plain core NATS publish, which has nobody waiting for an answer.
func reply(m *nats.Msg, status string) {
	if m.Reply == "" {
		return
	}
	r := nats.NewMsg(m.Reply)
	r.Header.Set(HeaderAck, status)
	// An error here means the connection is gone; the publisher then sees
	// its own error or context end and does not retry.
	_ = m.RespondMsg(r)
}

// Messages is the bounded queue. It is closed when the subscription ends;
// messages still in it were acknowledged and should be consumed.
func (s *Subscription) Messages() <-chan *Message { return s.ch }

// Close ends the subscription: it stops interest, refuses (nacks) every
// message not yet queued so its publisher retries, waits until no more can
// arrive (bounded by the drain timeout) and closes Messages. It is safe to
// call more than once and from any goroutine.
func (s *Subscription) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		// Drain, unlike Unsubscribe, keeps delivering what the client already
		// holds, so handle can nack it instead of leaving publishers waiting.
		if err := s.sub.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			s.closeErr = fmt.Errorf("bus: close subscription %s: %w", s.subject, err)
		}
		deadline := time.Now().Add(s.drain)
		// With the server away nothing more arrives to refuse, and a drain
		// would only wait out its timeout.
		for s.sub.IsValid() && time.Now().Before(deadline) && s.conn.nc.IsConnected() {
			time.Sleep(2 * time.Millisecond)
		}
		if s.sub.IsValid() {
			_ = s.sub.Unsubscribe()
			if s.closeErr == nil && s.conn.nc.IsConnected() {
				s.closeErr = fmt.Errorf("bus: close subscription %s: drain did not finish in %s", s.subject, s.drain)
			}
		}
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.senders.Wait()
		close(s.ch)
		s.conn.untrack(s)
	})
	return s.closeErr
}
