package bus

import (
	"errors"
	"net"
	"testing"
	"time"
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
