package bus

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/flowrun/flowrun/framework/bus/bustest"
)

// TestEmbeddedRefusesStrangers: a client that does not hold the run's
// identity (no credentials, or an identity of its own) is refused at
// CONNECT, so it can neither subscribe to the run's subjects nor publish
// on them; the run's own connections are unaffected.
func TestEmbeddedRefusesStrangers(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t, ServerOptions{})
	own := connect(t, srv, "own")
	sub, err := own.Subscribe(ctx, "batches.plan", 4)
	if err != nil {
		t.Fatal(err)
	}

	if nc, err := nats.Connect(srv.ClientURL(), nats.NoReconnect()); !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("connect without credentials: %v, want an authorization violation", err)
	}
	other, err := NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if c, err := Connect(srv.ClientURL(), other.Option()); err == nil || !strings.Contains(err.Error(), "uthorization") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("connect as another identity: %v, want an authorization violation", err)
	}

	// Below the client library: speak the protocol as a hostile client
	// would, subscribing to everything and publishing without waiting for
	// the server's verdict.
	got, err := rawStranger(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "-ERR 'Authorization Violation'") {
		t.Errorf("raw client got %q, want -ERR 'Authorization Violation'", got)
	}
	if strings.Contains(got, "MSG ") || strings.Contains(got, "PONG") {
		t.Errorf("raw client was served: %q", got)
	}
	// Its PUB reached no one.
	select {
	case m := <-sub.Messages():
		t.Errorf("the run's subscription received %q from a client without credentials", m.Data)
	case <-time.After(200 * time.Millisecond):
	}
	_ = sub.Close()
}

// rawStranger connects to url without credentials, subscribes to every
// subject and publishes on batches.plan, and returns what the server
// answered (lines joined by " | ") until it closed the connection.
func rawStranger(url string) (string, error) {
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "nats://"), 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB > 1\r\nPUB batches.plan 5\r\nhello\r\nPING\r\n")); err != nil {
		return "", err
	}
	var lines []string
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			lines = append(lines, strings.TrimSpace(line))
		}
		if err != nil {
			break // the server closed the connection (or the deadline passed)
		}
	}
	return strings.Join(lines, " | "), nil
}

// serveNATS starts a nats-server configured by opts (on loopback, a free
// port) for the client-side authentication tests.
func serveNATS(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// roundTrip checks that c can subscribe and publish through the bus.
func roundTrip(t *testing.T, c *Conn) {
	t.Helper()
	ctx := testContext(t)
	sub, err := c.Subscribe(ctx, "auth.rt", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(ctx, "auth.rt", NewMessage([]byte("ok"))); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, ctx, sub); string(m.Data) != "ok" {
		t.Fatalf("got %q", m.Data)
	}
	_ = sub.Close()
}

// TestClientAuth: each way WithAuth signs in reaches a server configured
// for it, and the same server refuses a client without it.
func TestClientAuth(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) (*server.Options, ClientAuth)
	}{
		{"Token", func(t *testing.T) (*server.Options, ClientAuth) {
			return &server.Options{Authorization: "s3cret-token"}, ClientAuth{Token: "s3cret-token"}
		}},
		{"NkeySeed", func(t *testing.T) (*server.Options, ClientAuth) {
			kp, _ := nkeys.CreateUser()
			pub, _ := kp.PublicKey()
			seed, _ := kp.Seed()
			return &server.Options{Nkeys: []*server.NkeyUser{{Nkey: pub}}}, ClientAuth{NkeySeedFile: write("user.nk", string(seed))}
		}},
		{"Creds", func(t *testing.T) (*server.Options, ClientAuth) {
			op, err := bustest.NewOperator()
			if err != nil {
				t.Fatal(err)
			}
			opts, err := op.ServerOptions()
			if err != nil {
				t.Fatal(err)
			}
			return opts, ClientAuth{CredsFile: write("user.creds", string(op.Creds))}
		}},
		{"TLSClientCert", func(t *testing.T) (*server.Options, ClientAuth) {
			p, err := bustest.NewPKI(dir)
			if err != nil {
				t.Fatal(err)
			}
			tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: p.ServerCert, KeyFile: p.ServerKey, CaFile: p.CA, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			return &server.Options{TLS: true, TLSVerify: true, TLSConfig: tc, TLSTimeout: 2},
				ClientAuth{CAFile: p.CA, CertFile: p.ClientCert, KeyFile: p.ClientKey}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts, auth := tc.setup(t)
			ns := serveNATS(t, opts)
			c, err := Connect(ns.ClientURL(), WithAuth(auth))
			if err != nil {
				t.Fatalf("connect with %s: %v", tc.name, err)
			}
			defer c.Close()
			roundTrip(t, c)
			if c, err := Connect(ns.ClientURL()); err == nil {
				c.Close()
				t.Fatal("a client without credentials was let in")
			}
		})
	}
}

// TestClientAuthChecksBeforeDialling: a missing file or two ways of
// signing in at once are reported by Connect without touching the server.
func TestClientAuthChecksBeforeDialling(t *testing.T) {
	for _, a := range []ClientAuth{
		{CredsFile: "/nonexistent/user.creds"},
		{Token: "t", NkeySeedFile: "/etc/hostname"},
		{CertFile: "/etc/hostname"},
	} {
		if c, err := Connect("nats://127.0.0.1:1", WithAuth(a), WithConnectTimeout(200*time.Millisecond)); err == nil {
			c.Close()
			t.Errorf("%+v: connected", a)
		} else if strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%+v: dialled before checking: %v", a, err)
		}
	}
}
