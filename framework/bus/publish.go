package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Reply header of the flow-control protocol (see the package doc).
const (
	// HeaderAck is the reply header a subscription answers with.
	HeaderAck = "Flowrun-Bus"
	// ackQueued: the message is in the subscriber's bounded queue.
	ackQueued = "ack"
	// ackRefused: the subscriber was closing and did not queue the message.
	ackRefused = "nack"
	// HeaderMsgID carries the id Publish gives a message, the same on every
	// attempt, so that a message sent again after a reconnect is queued
	// once.
	HeaderMsgID = "Flowrun-Msg-Id"
)

// Backoff between attempts that certainly did not deliver (no responders, or
// a nack). Short at first because the usual cause is a consumer that is a
// few milliseconds from subscribing; capped so a long wait costs little CPU.
const (
	retryMin = 2 * time.Millisecond
	retryMax = 100 * time.Millisecond
)

// ErrUnexpectedReply is returned when something other than a bus
// subscription answered a Publish (e.g. a plain NATS responder on the same
// subject). The message may have been consumed, so it is not retried.
var ErrUnexpectedReply = errors.New("bus: unexpected reply (not a bus subscription)")

// Publish sends m on subject and returns once a subscription has taken it
// into its bounded queue. It blocks while that queue is full, for as long as
// ctx allows: give it a context without a deadline for a stage's output,
// and cancel the context to stop. It sends again only what cannot be taken
// twice: a message no subscriber received (no subscriber yet, or a closing
// one refused it), and, after the connection reconnected, a message whose
// request or ack the outage may have lost — every Publish carries a
// message id (HeaderMsgID) that a subscription acks without queueing it
// again. On a context error the delivery is unknown; once the server is
// lost (Lost) it returns ErrServerLost.
func (c *Conn) Publish(ctx context.Context, subject string, m *Message) error {
	if m == nil {
		return fmt.Errorf("bus: publish %s: nil message", subject)
	}
	if subject == "" {
		return errors.New("bus: publish: empty subject")
	}
	header := nats.Header{}
	for k, v := range m.Header {
		header[k] = v
	}
	header.Set(HeaderMsgID, fmt.Sprintf("%s.%d", c.nonce, c.sent.Add(1)))
	req := &nats.Msg{Subject: subject, Header: header, Data: m.Data}
	wait := retryMin
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bus: publish %s: %w", subject, err)
		}
		reply, reconnected, err := c.request(ctx, req)
		switch {
		case err == nil && reply.Header.Get(HeaderAck) == ackQueued:
			return nil
		case err == nil && reply.Header.Get(HeaderAck) == ackRefused:
			// Not queued by a closing subscriber: safe to send again.
		case err == nil:
			return fmt.Errorf("bus: publish %s: %w", subject, ErrUnexpectedReply)
		case reconnected:
			// The outage may have lost the request or its ack; the id
			// makes sending it again safe. At once: nothing to back off from.
			c.resent.Add(1)
			continue
		case errors.Is(err, nats.ErrNoResponders):
			// The server delivered it to nobody: safe to send again.
			c.noResponderRetries.Add(1)
		case ctx.Err() != nil:
			return fmt.Errorf("bus: publish %s: %w", subject, ctx.Err())
		default:
			return fmt.Errorf("bus: publish %s: %w", subject, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("bus: publish %s: %w", subject, ctx.Err())
		case <-c.lost:
			t.Stop()
			return fmt.Errorf("bus: publish %s: %w", subject, c.LostErr())
		case <-t.C:
		}
		wait = min(2*wait, retryMax)
	}
}

// request sends req and waits for its reply until ctx ends, the connection
// reconnects (reconnected: the reply may never come), or the server is
// lost. RequestMsgWithContext has no timeout of its own, which is what lets
// a consumer be slow; these are the only other ends of the wait.
func (c *Conn) request(ctx context.Context, req *nats.Msg) (reply *nats.Msg, reconnected bool, err error) {
	again := c.reconnects()
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-again:
			cancel(errReconnected)
		case <-c.lost:
			cancel(c.LostErr())
		case <-rctx.Done():
		}
	}()
	reply, err = c.nc.RequestMsgWithContext(rctx, req)
	if err != nil && ctx.Err() == nil {
		switch cause := context.Cause(rctx); {
		case errors.Is(cause, errReconnected):
			return nil, true, err
		case errors.Is(cause, ErrServerLost):
			return nil, false, cause
		}
	}
	return reply, false, err
}

// errReconnected is the cause of a request's wait ended by a reconnect.
var errReconnected = errors.New("bus: reconnected while waiting for the ack")
