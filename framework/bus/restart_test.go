package bus

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// freePort finds a port to restart a server on: a restarted server must
// come back where its clients reconnect to.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestPublishSurvivesServerRestart: a publisher waiting for its ack while
// the server restarts gets it once the server is back, and the message is
// delivered once, not twice (the resent request carries the same id).
func TestPublishSurvivesServerRestart(t *testing.T) {
	ctx := testContext(t)
	port := freePort(t)
	srv := startServer(t, ServerOptions{Port: port})
	pub := connect(t, srv, "pub")
	subConn := connect(t, srv, "sub")
	sub, err := subConn.Subscribe(ctx, "restart", 0)
	if err != nil {
		t.Fatal(err)
	}

	// With credits 0 the ack waits for the consumer: the publisher is
	// waiting for it when the server goes away.
	done := make(chan error, 1)
	go func() { done <- pub.Publish(ctx, "restart", NewMessage([]byte("first"))) }()
	waitFor(t, func() bool { n, _ := sub.sub.Delivered(); return n >= 1 })

	srv.Shutdown()
	startServer(t, ServerOptions{Port: port, Identity: srv.Identity()})
	waitFor(t, func() bool { return pub.NATS().IsConnected() && subConn.NATS().IsConnected() })

	if m := receive(t, ctx, sub); string(m.Data) != "first" {
		t.Fatalf("got %q, want first", m.Data)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("publish across the restart: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("publish still waiting after the server came back")
	}
	// The next message after "first" must be "second", not "first" again.
	go func() { done <- pub.Publish(ctx, "restart", NewMessage([]byte("second"))) }()
	if m := receive(t, ctx, sub); string(m.Data) != "second" {
		t.Fatalf("got %q after the restart, want second (a duplicate was queued)", m.Data)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Before the cleanup shuts the server down, or Close waits out its drain.
	_ = sub.Close()
}

// TestAckLostWhilePublisherReconnects: the ack of a queued message is sent
// while the publisher's connection is down, so the server has nowhere to
// deliver it. The publisher sends the message again once it reconnects, and
// the subscription acks that copy without queueing it twice. (Before, the
// publisher waited for the lost ack forever: the hang of an external
// server restarted mid-run, where the two connections reconnect in either
// order.)
func TestAckLostWhilePublisherReconnects(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t, ServerOptions{})
	pub := connect(t, srv, "pub")
	subConn := connect(t, srv, "sub")
	sub, err := subConn.Subscribe(ctx, "lost-ack", 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pub.Publish(ctx, "lost-ack", NewMessage([]byte("first"))) }()
	waitFor(t, func() bool { n, _ := sub.sub.Delivered(); return n >= 1 })

	id, err := pub.NATS().GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.ns.DisconnectClientByID(id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return !pub.NATS().IsConnected() })
	// Consuming now sends the ack while the publisher is away.
	if m := receive(t, ctx, sub); string(m.Data) != "first" {
		t.Fatalf("got %q, want first", m.Data)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("publish still waiting for an ack lost while it reconnected")
	}
	if pub.resent.Load() == 0 {
		t.Error("the publisher acked without sending again: the ack was not lost, the test proves nothing")
	}
	go func() { done <- pub.Publish(ctx, "lost-ack", NewMessage([]byte("second"))) }()
	if m := receive(t, ctx, sub); string(m.Data) != "second" {
		t.Fatalf("got %q, want second (the copy sent again was queued twice)", m.Data)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestServerGoneBeyondGrace: a server that does not come back within the
// grace ends every wait with ErrServerLost and closes Lost.
func TestServerGoneBeyondGrace(t *testing.T) {
	ctx := testContext(t)
	port := freePort(t)
	srv := startServer(t, ServerOptions{Port: port})
	pub, err := Connect(srv.ClientURL(), WithGrace(200*time.Millisecond), srv.Auth())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	subConn := connect(t, srv, "sub")
	if _, err := subConn.Subscribe(ctx, "gone", 0, WithDrainTimeout(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pub.Publish(ctx, "gone", NewMessage([]byte("x"))) }()
	time.Sleep(50 * time.Millisecond) // let the request reach the subscriber
	srv.Shutdown()

	select {
	case err := <-done:
		if !errors.Is(err, ErrServerLost) {
			t.Fatalf("publish: %v, want ErrServerLost", err)
		}
	case <-ctx.Done():
		t.Fatal("publish still waiting for a server gone beyond the grace")
	}
	select {
	case <-pub.Lost():
	case <-ctx.Done():
		t.Fatal("Lost not closed")
	}
	if err := pub.LostErr(); err == nil || !errors.Is(err, ErrServerLost) {
		t.Fatalf("LostErr: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// blackHole is a stale member of subject's queue group: it takes what the
// server routes to it and never answers, as the interest of a cluster
// node that was killed does on the node a client has just moved to (NATS
// picks a queue member at random among local and routed interest, and the
// dead node's is dropped only once its route is seen closed). gone ends
// it, as the route's close does.
func blackHole(t *testing.T, srv *Server, subject string) (delivered func() int, gone func()) {
	t.Helper()
	hole := connect(t, srv, "hole")
	s, err := hole.NATS().QueueSubscribe(subject, DefaultQueue, func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := hole.NATS().Flush(); err != nil {
		t.Fatal(err)
	}
	return func() int { n, _ := s.Delivered(); return int(n) }, func() { _ = s.Unsubscribe(); _ = hole.NATS().Flush() }
}

// TestRequestLostAfterReconnectIsResent is the hang of a run whose cluster
// node was killed: the publisher reconnects, and a request it sends while
// the new node still holds the dead node's interest goes to that interest
// and is lost, with no error and no reconnect left to wake it. A request
// sent while the connection settles after a reconnect is sent again after
// the settle interval, so the subscriber gets it, once. The grace is a
// minute, longer than the test's context: only the settle resend can
// deliver it.
func TestRequestLostAfterReconnectIsResent(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t, ServerOptions{})
	pub, err := Connect(srv.ClientURL(), WithName("pub"), WithGrace(time.Minute), srv.Auth())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	subConn := connect(t, srv, "sub")
	delivered, gone := blackHole(t, srv, "settle")

	id, err := pub.NATS().GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.ns.DisconnectClientByID(id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, settling := pub.resendAfter(false); return settling })

	done := make(chan error, 1)
	go func() { done <- pub.Publish(ctx, "settle", NewMessage([]byte("first"))) }()
	waitFor(t, func() bool { return delivered() >= 1 }) // lost in the stale interest
	gone()
	sub, err := subConn.Subscribe(ctx, "settle", 0)
	if err != nil {
		t.Fatal(err)
	}
	if m := receive(t, ctx, sub); string(m.Data) != "first" {
		t.Fatalf("got %q, want first", m.Data)
	}
	if err := <-done; err != nil {
		t.Fatalf("publish: %v", err)
	}
	if pub.resent.Load() == 0 {
		t.Error("delivered without sending again: the request was not lost, the test proves nothing")
	}
	go func() { done <- pub.Publish(ctx, "settle", NewMessage([]byte("second"))) }()
	if m := receive(t, ctx, sub); string(m.Data) != "second" {
		t.Fatalf("got %q, want second (a copy sent again was queued twice)", m.Data)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_ = sub.Close()
}

// TestLostRequestIsResentAfterTheGrace: a request lost with no reconnect
// at all (its subscriber vanished with it) is sent again once it has
// waited a grace, with a warning naming the subject: a lost message never
// leaves a run waiting silently.
func TestLostRequestIsResentAfterTheGrace(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t, ServerOptions{})
	var logs syncBuffer
	pub, err := Connect(srv.ClientURL(), WithName("pub"), WithGrace(300*time.Millisecond), srv.Auth(),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	subConn := connect(t, srv, "sub")
	delivered, gone := blackHole(t, srv, "lost")

	done := make(chan error, 1)
	go func() { done <- pub.Publish(ctx, "lost", NewMessage([]byte("only"))) }()
	waitFor(t, func() bool { return delivered() >= 1 })
	gone()
	sub, err := subConn.Subscribe(ctx, "lost", 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := receive(t, ctx, sub); string(m.Data) != "only" {
		t.Fatalf("got %q, want only", m.Data)
	}
	if err := <-done; err != nil {
		t.Fatalf("publish: %v", err)
	}
	if !strings.Contains(logs.String(), "subject=lost") {
		t.Errorf("the resend was silent; log:\n%s", logs.String())
	}
	select {
	case m := <-sub.Messages():
		t.Fatalf("queued twice: %q", m.Data)
	default:
	}
	_ = sub.Close()
}

// syncBuffer is a bytes.Buffer a logger may write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
