// Package bus is flowrun's messaging layer: the NATS subjects that join the
// stages of a graph. It owns the embedded nats-server, the connection to an
// embedded or external server, a tiny publish/subscribe API with explicit
// flow control, and the propagation of trace context in message headers.
//
// An embedded server admits only the connections that hold its per-run
// Identity (an nkey generated in process); WithAuth signs in to an external
// server with a token, an nkey seed, a creds file and TLS.
//
// A bus message is small: a header of a few hundred bytes (batch sequence,
// shared-memory region handles, trace context). Bulk data never travels
// through this package; it lives in regions.
//
// # Why not plain core NATS
//
// Core NATS is fire-and-forget. When a subscriber falls behind, the client
// library drops messages once the subscription's pending limits are reached
// (a "slow consumer"), and the publisher never learns about it. A stage may
// legitimately take seconds per batch, so a plain publish would silently lose
// batches. The bus therefore never uses a plain publish.
//
// # Flow-control protocol
//
// Every Publish is a NATS request:
//
//  1. The publisher sends the message with a private reply inbox and waits.
//  2. The subscriber (a queue-group member, so exactly one subscriber of a
//     subject receives each message) takes the message into its bounded local
//     queue, a Go channel whose capacity is the subscription's credits. Only
//     once the message is in that queue does it reply with an ack
//     (header Flowrun-Bus: ack). While the queue is full it does not reply,
//     so the publisher keeps waiting: that wait is the back-pressure.
//  3. Publish returns nil only after the ack. Hence per edge at most
//     credits messages sit in the queue, one more is being processed by the
//     consumer, and one more waits unacknowledged per publisher: memory is
//     bounded and a single publisher's order is preserved.
//
// Publish waits as long as its context allows; there is no timeout of its
// own, because a slow consumer is not a failure. It retries only when the
// message was certainly not delivered:
//
//   - nats.ErrNoResponders: no subscriber exists yet (it is starting), the
//     server did not deliver the message to anybody;
//   - a nack (header Flowrun-Bus: nack): a subscriber that was closing
//     received the message but did not take it into its queue.
//
// Retries use a small exponential backoff until the context ends.
//
// A server restart can lose a request or its ack (an ack sent while the
// publisher's connection is down has nowhere to go), so a publisher still
// waiting when its connection reconnects sends the message again at once.
// That is safe because every Publish stamps a message id (header
// Flowrun-Msg-Id, the same on every attempt) and a subscription acks an id
// it has already queued without queueing it twice. For the same reason a
// request is sent again when it has had no ack for the settle interval
// (a tenth of the grace) while the connection settles after a reconnect —
// in a cluster the node a client moved to may still route a queue
// group's message to the dead node's interest, losing it silently — and
// when it has had none for a whole grace, with a warning naming the
// subject: a lost message must never leave a run waiting. A connection whose
// server stays unreachable for longer than its grace (WithGrace, default
// 10 s) is lost: every waiting Publish returns ErrServerLost and Lost is
// closed, so a run ends with an error naming the server instead of waiting.
// Any other outcome (ack, connection error, context end while waiting for
// the reply) is final. A Publish that returns a context error is "delivery
// unknown"; it only happens when the run is being torn down.
//
// When a Subscription closes (Close, or its context ends) it stops interest,
// nacks every message it has not yet queued so their publishers retry
// elsewhere, and closes its channel. Messages already in the channel were
// acked and stay readable: a stage that drains on shutdown should range over
// the channel until it is closed.
//
// # Trace context
//
// Inject and Extract carry W3C trace context (traceparent, tracestate) in the
// message header through HeaderCarrier, which never canonicalises keys, and
// always use propagation.TraceContext explicitly, never the global propagator.
//
// Package bus must not import other framework packages: stages, the runtime
// and the CLI import it, not the other way round.
package bus
