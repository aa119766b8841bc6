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
// one refused it), and a message whose request or ack may have been lost —
// every Publish carries a message id (HeaderMsgID) that a subscription acks
// without queueing it again. A request may have been lost when the
// connection reconnected while it waited, when it was sent while the
// connection was settling after a reconnect (a cluster node can still
// route it to the interest of the node that died: see resendAfter), or
// when it has waited a whole grace: it is then sent again, so that no lost
// message leaves a run waiting. On a context error the delivery is
// unknown; once the server is lost (Lost) it returns ErrServerLost.
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
	id := fmt.Sprintf("%s.%d", c.nonce, c.sent.Add(1))
	header.Set(HeaderMsgID, id)
	req := &nats.Msg{Subject: subject, Header: header, Data: m.Data}
	wait := retryMin
	// suspect: a reconnect happened while this message waited, or an
	// attempt sent while the connection settled went unanswered, so each
	// attempt is sent again after the settle interval until one is acked.
	// slow counts the resends after a whole grace without an ack (no
	// reconnect): each doubles the next wait, up to maxSlowBackoff graces,
	// so that a consumer legitimately blocked for long gathers a copy per
	// few graces behind it, not one per grace.
	suspect, resends, slow := false, 0, 0
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bus: publish %s: %w", subject, err)
		}
		after, settling := c.resendAfter(suspect)
		if !settling {
			after *= time.Duration(1) << min(slow, maxSlowShift)
		}
		reply, again, err := c.request(ctx, req, after)
		switch {
		case err == nil && reply.Header.Get(HeaderAck) == ackQueued:
			return nil
		case err == nil && reply.Header.Get(HeaderAck) == ackRefused:
			// Not queued by a closing subscriber: safe to send again.
		case err == nil:
			return fmt.Errorf("bus: publish %s: %w", subject, ErrUnexpectedReply)
		case again != nil:
			// The request or its ack may be lost; the id makes sending it
			// again safe. At once: nothing to back off from.
			suspect = suspect || errors.Is(again, errReconnected) || settling
			if errors.Is(again, errNoAck) && !settling {
				slow++
			}
			resends++
			c.resent.Add(1)
			c.logResend(subject, id, again, settling, resends)
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

// logResend says that a request is sent again and why. After a reconnect
// (or while the connection settles) it is expected: a warning for the
// message's first, debug after. After a whole grace without an ack it may
// be a slow consumer or a lost message: always a warning, naming the
// subject, so that a run never waits silently.
func (c *Conn) logResend(subject, id string, why error, settling bool, n int) {
	switch {
	case errors.Is(why, errNoAck) && !settling:
		c.log.Warn("bus: no ack for a grace, sending again (a slow consumer, or a lost message)",
			"subject", subject, "id", id, "grace", c.grace, "attempt", n+1)
	case n == 1:
		c.log.Warn("bus: sending again a message a reconnect may have lost", "subject", subject, "id", id, "why", why)
	default:
		c.log.Debug("bus: sending again", "subject", subject, "id", id, "why", why, "attempt", n+1)
	}
}

// maxSlowShift caps the backoff of resends to a slow consumer at 2^3 = 8
// graces between copies.
const maxSlowShift = 3

// resendAfter is how long an attempt waits for its ack before it is sent
// again, and whether that is the short settle interval.
//
// After a reconnect the connection settles for a grace: in a cluster the
// node it moved to may not yet have dropped the interest of the node that
// died (its route closes asynchronously), and NATS picks a queue group's
// member at random among local and routed interest, so a request sent then
// can go to a subscriber that no longer exists and be lost without an
// error. While settling, and for a message that waited across a reconnect,
// an attempt is sent again after settle. Otherwise after the grace: a
// consumer may be slow, but a message lost for any other reason must not
// leave the run waiting forever either.
func (c *Conn) resendAfter(suspect bool) (time.Duration, bool) {
	last := c.lastReconnect.Load()
	if suspect || (last != 0 && time.Since(time.Unix(0, last)) < c.grace) {
		return c.settle, true
	}
	return c.grace, false
}

// request sends req and waits for its reply until ctx ends, the server is
// lost, or the reply may never come: the connection reconnects, or after
// passes without a reply. Then again says which (errReconnected, errNoAck).
// RequestMsgWithContext has no timeout of its own, which is what lets a
// consumer be slow; these are the only other ends of the wait.
func (c *Conn) request(ctx context.Context, req *nats.Msg, after time.Duration) (reply *nats.Msg, again, err error) {
	reconnected := c.reconnects()
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		t := time.NewTimer(after)
		defer t.Stop()
		select {
		case <-reconnected:
			cancel(errReconnected)
		case <-t.C:
			cancel(errNoAck)
		case <-c.lost:
			cancel(c.LostErr())
		case <-rctx.Done():
		}
	}()
	reply, err = c.nc.RequestMsgWithContext(rctx, req)
	if err != nil && ctx.Err() == nil {
		switch cause := context.Cause(rctx); {
		case errors.Is(cause, errReconnected), errors.Is(cause, errNoAck):
			return nil, cause, err
		case errors.Is(cause, ErrServerLost):
			return nil, nil, cause
		}
	}
	return reply, nil, err
}

var (
	// errReconnected is the cause of a request's wait ended by a reconnect.
	errReconnected = errors.New("reconnected while waiting for the ack")
	// errNoAck is the cause of a request's wait ended by resendAfter.
	errNoAck = errors.New("no ack in time")
)
