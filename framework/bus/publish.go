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
// and cancel the context to stop. It retries only while the message has
// certainly not been delivered (no subscriber yet, or a closing one refused
// it). On a context error the delivery is unknown.
func (c *Conn) Publish(ctx context.Context, subject string, m *Message) error {
	if m == nil {
		return fmt.Errorf("bus: publish %s: nil message", subject)
	}
	if subject == "" {
		return errors.New("bus: publish: empty subject")
	}
	req := &nats.Msg{Subject: subject, Header: m.Header, Data: m.Data}
	wait := retryMin
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bus: publish %s: %w", subject, err)
		}
		// RequestMsgWithContext has no timeout of its own: it waits for the
		// reply until ctx ends, which is what lets a consumer be slow.
		reply, err := c.nc.RequestMsgWithContext(ctx, req)
		switch {
		case err == nil && reply.Header.Get(HeaderAck) == ackQueued:
			return nil
		case err == nil && reply.Header.Get(HeaderAck) == ackRefused:
			// Not queued by a closing subscriber: safe to send again.
		case err == nil:
			return fmt.Errorf("bus: publish %s: %w", subject, ErrUnexpectedReply)
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
		case <-t.C:
		}
		wait = min(2*wait, retryMax)
	}
}
