package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// startServer runs an embedded server on a random port for one test.
func startServer(t *testing.T, opts ServerOptions) *Server {
	t.Helper()
	if opts.Port == 0 {
		opts.Port = -1
	}
	s, err := StartEmbedded(opts)
	if err != nil {
		t.Fatalf("start embedded server: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t *testing.T, s *Server, name string) *Conn {
	t.Helper()
	c, err := Connect(s.ClientURL(), WithName(name), s.Auth())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// testContext bounds a test so that a protocol bug shows up as a failure,
// not a hung `go test`.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func receive(t *testing.T, ctx context.Context, sub *Subscription) *Message {
	t.Helper()
	select {
	case m, ok := <-sub.Messages():
		if !ok {
			t.Fatal("subscription closed before a message arrived")
		}
		return m
	case <-ctx.Done():
		t.Fatalf("no message: %v", ctx.Err())
		return nil
	}
}

func TestPublishSubscribeRoundTrip(t *testing.T) {
	ctx := testContext(t)
	s := startServer(t, ServerOptions{})
	pub, subc := connect(t, s, "pub"), connect(t, s, "sub")

	sub, err := subc.Subscribe(ctx, "batches.plan", 4)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMessage([]byte("regions: ids=3"))
	m.Header.Set("Flowrun-Seq", "42")
	if err := pub.Publish(ctx, "batches.plan", m); err != nil {
		t.Fatalf("publish: %v", err)
	}
	got := receive(t, ctx, sub)
	if got.Subject != "batches.plan" || string(got.Data) != "regions: ids=3" || got.Header.Get("Flowrun-Seq") != "42" {
		t.Fatalf("got subject %q data %q header %v", got.Subject, got.Data, got.Header)
	}
	if err := sub.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, ok := <-sub.Messages(); ok {
		t.Fatal("Messages still open after Close")
	}
}

// A consumer much slower than its producer, with two credits: every batch
// arrives exactly once and in order, and the producer is held back so that
// acknowledged-but-unfinished batches never exceed credits+1.
func TestSlowConsumerFlowControl(t *testing.T) {
	const n, credits = 2000, 2
	ctx := testContext(t)
	s := startServer(t, ServerOptions{})
	pub, subc := connect(t, s, "pub"), connect(t, s, "sub")

	sub, err := subc.Subscribe(ctx, "edge", credits)
	if err != nil {
		t.Fatal(err)
	}
	var acked, done atomic.Int64
	var maxInFlight atomic.Int64
	observe := func() {
		in := acked.Load() - done.Load()
		for {
			cur := maxInFlight.Load()
			if in <= cur || maxInFlight.CompareAndSwap(cur, in) {
				return
			}
		}
	}

	consumerErr := make(chan error, 1)
	go func() {
		next := 0
		for m := range sub.Messages() {
			seq, err := strconv.Atoi(string(m.Data))
			if err != nil || seq != next {
				consumerErr <- fmt.Errorf("got %q, want %d (lost, duplicated or reordered)", m.Data, next)
				return
			}
			next++
			if next%100 == 0 {
				time.Sleep(2 * time.Millisecond) // now and then a long batch
			} else {
				time.Sleep(50 * time.Microsecond)
			}
			done.Add(1)
			observe()
			if next == n {
				consumerErr <- nil
				return
			}
		}
		consumerErr <- fmt.Errorf("subscription closed after %d messages", next)
	}()

	for i := 0; i < n; i++ {
		if err := pub.Publish(ctx, "edge", &Message{Data: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		acked.Add(1)
		observe()
	}
	if err := <-consumerErr; err != nil {
		t.Fatal(err)
	}
	if got := maxInFlight.Load(); got > credits+1 {
		t.Fatalf("in flight reached %d, want ≤ credits+1 = %d", got, credits+1)
	}
	t.Logf("max in flight %d (credits %d)", maxInFlight.Load(), credits)
	select {
	case m := <-sub.Messages():
		t.Fatalf("extra message after the last one: %q", m.Data)
	case <-time.After(50 * time.Millisecond):
	}
}

// Why the bus is request/reply: a plain core NATS publish of bulk payloads to
// a subscriber that falls behind loses messages (the client drops them once
// the pending limits are hit, and the publisher never knows). The same
// payloads through Publish all arrive.
func TestCoreNATSDropsWhereBusDoesNot(t *testing.T) {
	const n, size = 12, 8 << 20
	ctx := testContext(t)
	s := startServer(t, ServerOptions{MaxPayload: 16 << 20})
	payload := make([]byte, size)

	t.Run("core publish drops", func(t *testing.T) {
		pubc, subc := connect(t, s, "core-pub"), connect(t, s, "core-sub")
		var received atomic.Int64
		release := make(chan struct{})
		sub, err := subc.NATS().Subscribe("core.bulk", func(*nats.Msg) {
			<-release // a slow stage: busy until all messages were sent
			received.Add(1)
		})
		if err != nil {
			t.Fatal(err)
		}
		// Room for two pending payloads, as a memory-conscious consumer would set.
		if err := sub.SetPendingLimits(2, 2*size); err != nil {
			t.Fatal(err)
		}
		if err := subc.NATS().Flush(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if err := pubc.NATS().Publish("core.bulk", payload); err != nil {
				t.Fatalf("core publish %d: %v", i, err)
			}
		}
		if err := pubc.NATS().Flush(); err != nil {
			t.Fatal(err)
		}
		// The subscriber's connection has read everything once a round trip
		// on it completes after the publisher's flush.
		if err := subc.NATS().Flush(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		var dropped int
		for time.Now().Before(deadline) {
			if dropped, _ = sub.Dropped(); dropped > 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		close(release)
		if dropped < 1 {
			t.Fatalf("core NATS dropped %d of %d messages; expected ≥ 1 with pending limits of 2", dropped, n)
		}
		t.Logf("core NATS: %d of %d messages dropped for the slow consumer", dropped, n)
	})

	t.Run("bus publish loses none", func(t *testing.T) {
		pub, subc := connect(t, s, "bus-pub"), connect(t, s, "bus-sub")
		sub, err := subc.Subscribe(ctx, "bus.bulk", 1)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan int, 1)
		go func() {
			count := 0
			for m := range sub.Messages() {
				time.Sleep(20 * time.Millisecond) // the same slow stage
				if len(m.Data) == size {
					count++
				}
				if count == n {
					break
				}
			}
			got <- count
		}()
		for i := 0; i < n; i++ {
			if err := pub.Publish(ctx, "bus.bulk", &Message{Data: payload}); err != nil {
				t.Fatalf("bus publish %d: %v", i, err)
			}
		}
		select {
		case count := <-got:
			if count != n {
				t.Fatalf("bus delivered %d of %d", count, n)
			}
		case <-ctx.Done():
			t.Fatal("bus consumer did not receive every message")
		}
	})
}

func TestPublishHonoursContextCancel(t *testing.T) {
	ctx := testContext(t)
	s := startServer(t, ServerOptions{})
	pub, subc := connect(t, s, "pub"), connect(t, s, "sub")

	t.Run("blocked by a full queue", func(t *testing.T) {
		// Nobody reads: one credit fills with the first message, the second
		// Publish waits for room that never comes.
		if _, err := subc.Subscribe(ctx, "stuck", 1); err != nil {
			t.Fatal(err)
		}
		if err := pub.Publish(ctx, "stuck", NewMessage([]byte("1"))); err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() { errc <- pub.Publish(pctx, "stuck", NewMessage([]byte("2"))) }()
		select {
		case err := <-errc:
			t.Fatalf("Publish returned %v while the queue was full", err)
		case <-time.After(100 * time.Millisecond):
		}
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Publish did not return after cancel")
		}
	})

	t.Run("no subscriber", func(t *testing.T) {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err := pub.Publish(pctx, "nobody.listens", NewMessage(nil))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestPublishBeforeSubscribe(t *testing.T) {
	ctx := testContext(t)
	s := startServer(t, ServerOptions{})
	pub, subc := connect(t, s, "pub"), connect(t, s, "sub")

	errc := make(chan error, 1)
	go func() { errc <- pub.Publish(ctx, "late", NewMessage([]byte("first"))) }()
	// Subscribe only once the publisher has really found nobody.
	for pub.noResponderRetries.Load() == 0 {
		select {
		case err := <-errc:
			t.Fatalf("Publish returned %v with no subscriber", err)
		case <-time.After(time.Millisecond):
		}
	}
	sub, err := subc.Subscribe(ctx, "late", 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := receive(t, ctx, sub); string(m.Data) != "first" {
		t.Fatalf("got %q", m.Data)
	}
	if err := <-errc; err != nil {
		t.Fatalf("publish: %v", err)
	}
	select {
	case m := <-sub.Messages():
		t.Fatalf("duplicate delivery: %q", m.Data)
	case <-time.After(50 * time.Millisecond):
	}
}

// A subscription that closes with a publisher waiting refuses that message,
// and the publisher hands it to the next subscriber: nothing lost, nothing
// doubled. What it had already queued stays readable.
func TestCloseRefusesUnqueuedMessages(t *testing.T) {
	ctx := testContext(t)
	s := startServer(t, ServerOptions{})
	pub, subc := connect(t, s, "pub"), connect(t, s, "sub")

	first, err := subc.Subscribe(ctx, "handover", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctx, "handover", NewMessage([]byte("a"))); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- pub.Publish(ctx, "handover", NewMessage([]byte("b"))) }()
	time.Sleep(50 * time.Millisecond) // let "b" reach the full subscriber
	if err := first.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	var kept []string
	for m := range first.Messages() {
		kept = append(kept, string(m.Data))
	}
	if strings.Join(kept, ",") != "a" {
		t.Fatalf("closed subscription held %v, want [a]", kept)
	}
	second, err := subc.Subscribe(ctx, "handover", 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := receive(t, ctx, second); string(m.Data) != "b" {
		t.Fatalf("got %q, want b", m.Data)
	}
	if err := <-errc; err != nil {
		t.Fatalf("publish b: %v", err)
	}
}

// Several producers into one stage: everything arrives once, and each
// producer's own order holds.
func TestConcurrentPublishers(t *testing.T) {
	const producers, each = 4, 250
	ctx := testContext(t)
	s := startServer(t, ServerOptions{})
	subc := connect(t, s, "sub")
	sub, err := subc.Subscribe(ctx, "fanin", 2)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		pub := connect(t, s, fmt.Sprintf("pub-%d", p))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := pub.Publish(ctx, "fanin", NewMessage([]byte(fmt.Sprintf("%d/%d", p, i)))); err != nil {
					t.Errorf("producer %d publish %d: %v", p, i, err)
					return
				}
			}
		}()
	}
	next := make([]int, producers)
	for k := 0; k < producers*each; k++ {
		m := receive(t, ctx, sub)
		var p, i int
		if _, err := fmt.Sscanf(string(m.Data), "%d/%d", &p, &i); err != nil {
			t.Fatalf("bad payload %q", m.Data)
		}
		if i != next[p] {
			t.Fatalf("producer %d: got %d, want %d", p, i, next[p])
		}
		next[p]++
	}
	wg.Wait()
}

func TestTraceContextRoundTrip(t *testing.T) {
	ctx := testContext(t)
	s := startServer(t, ServerOptions{})
	pub, subc := connect(t, s, "pub"), connect(t, s, "sub")
	sub, err := subc.Subscribe(ctx, "traced", 1)
	if err != nil {
		t.Fatal(err)
	}

	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	sctx, span := tp.Tracer("bus-test").Start(ctx, "plan")
	m := NewMessage([]byte("batch"))
	Inject(sctx, m)
	span.End()
	if _, ok := m.Header["traceparent"]; !ok {
		t.Fatalf("Inject wrote keys %v, want exactly %q", HeaderCarrier(m.Header).Keys(), "traceparent")
	}
	if err := pub.Publish(ctx, "traced", m); err != nil {
		t.Fatal(err)
	}
	got := receive(t, ctx, sub)
	if _, ok := got.Header["traceparent"]; !ok {
		t.Fatalf("received keys %v, want exactly %q", HeaderCarrier(got.Header).Keys(), "traceparent")
	}
	remote := trace.SpanContextFromContext(Extract(context.Background(), got))
	want := span.SpanContext()
	if !remote.IsRemote() || remote.TraceID() != want.TraceID() || remote.SpanID() != want.SpanID() {
		t.Fatalf("extracted %v/%v remote=%v, want %v/%v", remote.TraceID(), remote.SpanID(), remote.IsRemote(), want.TraceID(), want.SpanID())
	}
}

func TestHeaderCarrierIsCaseExact(t *testing.T) {
	h := nats.Header{}
	c := HeaderCarrier(h)
	c.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if _, ok := h["Traceparent"]; ok {
		t.Fatal("key was canonicalised")
	}
	if c.Get("traceparent") == "" {
		t.Fatal("exact key not found")
	}
	// Written by someone who canonicalised: still readable.
	h2 := HeaderCarrier{"Tracestate": {"k=v"}}
	if h2.Get("tracestate") != "k=v" {
		t.Fatal("case-insensitive fallback failed")
	}
	if Extract(context.Background(), &Message{}) == nil {
		t.Fatal("Extract without header returned nil context")
	}
}

func TestConnectDeadURLFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there any more
	url := "nats://" + addr

	errc := make(chan error, 1)
	go func() {
		c, err := Connect(url, WithName("dead"))
		if c != nil {
			c.Close()
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Connect to a dead URL succeeded")
		}
		if !strings.HasPrefix(err.Error(), "bus: connect "+url+": ") {
			t.Fatalf("error %q does not name the URL", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Connect to a dead URL hung")
	}
}

func TestConnectRedactsPassword(t *testing.T) {
	// A password, and a token (a user without a password, as nats.go
	// reads it), in a list of URLs.
	for _, u := range []string{"nats://flow:secret@127.0.0.1:1", "nats://127.0.0.1:2,nats://secret@127.0.0.1:1"} {
		_, err := Connect(u, WithConnectTimeout(500*time.Millisecond))
		if err == nil {
			t.Fatal("expected an error")
		}
		if strings.Contains(err.Error(), "secret") {
			t.Fatalf("password leaked: %v", err)
		}
	}
}

func TestSubscribeRejectsNegativeCredits(t *testing.T) {
	s := startServer(t, ServerOptions{})
	c := connect(t, s, "c")
	if _, err := c.Subscribe(context.Background(), "x", -1); err == nil {
		t.Fatal("negative credits accepted")
	}
}

func TestSubscriptionEndsWithContext(t *testing.T) {
	s := startServer(t, ServerOptions{})
	c := connect(t, s, "c")
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := c.Subscribe(ctx, "x", 1)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case _, ok := <-sub.Messages():
		if ok {
			t.Fatal("unexpected message")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Messages not closed after the context ended")
	}
}

func TestConnCloseEndsSubscriptions(t *testing.T) {
	s := startServer(t, ServerOptions{})
	c, err := Connect(s.ClientURL(), s.Auth())
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe(context.Background(), "x", 1)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		for range sub.Messages() {
		}
		close(ended)
	}()
	c.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("a consumer ranging over Messages did not end when its connection closed")
	}
}
