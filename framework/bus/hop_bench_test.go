package bus

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
)

// BenchmarkHop is one stage hand-off on the bus: a Publish acknowledged by
// a subscription and the message taken by its consumer, at credits 0 (a
// rendezvous) and 2. BenchmarkHopNATS is the reference: a bare NATS
// request–reply on the same server, the least a hop can cost.
func BenchmarkHop(b *testing.B) {
	for _, credits := range []int{0, 2} {
		b.Run(map[int]string{0: "credits=0", 2: "credits=2"}[credits], func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pub, subc := benchConns(b)
			sub, err := subc.Subscribe(ctx, "hop", credits)
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range sub.Messages() {
				}
			}()
			m := NewMessage([]byte("regions: ids=3"))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := pub.Publish(ctx, "hop", m); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cancel()
			<-done
		})
	}
}

func BenchmarkHopNATS(b *testing.B) {
	pub, subc := benchConns(b)
	sub, err := subc.nc.Subscribe("hop", func(m *nats.Msg) { _ = m.Respond(nil) })
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = subc.nc.Flush()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := pub.nc.Request("hop", []byte("regions: ids=3"), 0x7fffffffffff); err != nil {
			b.Fatal(err)
		}
	}
}

// benchConns starts an embedded server and connects a publisher and a
// subscriber to it, all closed when the benchmark ends.
func benchConns(b *testing.B) (pub, sub *Conn) {
	s, err := StartEmbedded(ServerOptions{Port: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	for _, c := range []**Conn{&pub, &sub} {
		if *c, err = Connect(s.ClientURL(), s.Auth()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup((*c).Close)
	}
	return pub, sub
}
