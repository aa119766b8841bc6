package bus

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ServerOptions configures an embedded nats-server.
type ServerOptions struct {
	// Host to listen on. Empty means 127.0.0.1: the embedded server serves
	// the stages of this process and, with an explicit host, remote workers.
	Host string
	// Port to listen on. 0 or -1 picks a free port (tests and single-process
	// runs must not collide with anything else on the machine).
	Port int
	// MaxPayload is the largest message the server accepts, in bytes.
	// 0 keeps the nats-server default (1 MiB). Bus messages are headers only,
	// so only tests that demonstrate core NATS with bulk payloads raise it.
	MaxPayload int32
	// Logging enables the nats-server logger (stderr). Off by default so that
	// an embedded server does not interleave its log with the run's output.
	Logging bool
	// ReadyTimeout bounds the wait for the server to accept connections.
	// 0 means 5 s.
	ReadyTimeout time.Duration
	// Identity is the only client the server accepts. Nil means a new one
	// (NewIdentity): a server restarted on the same port for the same
	// clients passes the first server's Identity().
	Identity *Identity
}

// Server is an in-process nats-server. It accepts only clients that
// authenticate as its Identity (Auth), so another local user who finds its
// loopback port can neither subscribe nor publish.
type Server struct {
	ns *server.Server
	id *Identity
}

// StartEmbedded starts a nats-server inside this process and waits until it
// accepts client connections.
func StartEmbedded(opts ServerOptions) (*Server, error) {
	host := opts.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := opts.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	ready := opts.ReadyTimeout
	if ready <= 0 {
		ready = 5 * time.Second
	}
	id := opts.Identity
	if id == nil {
		var err error
		if id, err = NewIdentity(); err != nil {
			return nil, err
		}
	}
	sopts := &server.Options{
		Host:   host,
		Port:   port,
		NoLog:  !opts.Logging,
		NoSigs: true, // signals belong to the flowrun process, not to the server
		Nkeys:  []*server.NkeyUser{{Nkey: id.PublicKey()}},
	}
	if opts.MaxPayload < 0 {
		return nil, fmt.Errorf("bus: embedded server: max payload %d: must be ≥ 0", opts.MaxPayload)
	}
	if opts.MaxPayload > 0 {
		sopts.MaxPayload = opts.MaxPayload
		// nats-server refuses a max_payload above max_pending (64 MiB default).
		if int64(opts.MaxPayload) > server.MAX_PENDING_SIZE {
			sopts.MaxPending = int64(opts.MaxPayload)
		}
	}
	ns, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("bus: embedded server: %w", err)
	}
	if opts.Logging {
		ns.ConfigureLogger()
	}
	go ns.Start()
	if !ns.ReadyForConnections(ready) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("bus: embedded server on %s:%d: %w", host, port, errNotReady(ready))
	}
	return &Server{ns: ns, id: id}, nil
}

// Auth is the Connect option every client of the server needs: it signs
// in as the server's Identity.
func (s *Server) Auth() Option { return s.id.Option() }

// Identity is the client identity the server accepts.
func (s *Server) Identity() *Identity { return s.id }

func errNotReady(d time.Duration) error {
	return errors.New("not ready for connections after " + d.String())
}

// ClientURL is the nats:// URL clients (and remote workers) connect to.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// Shutdown stops the server and waits until it has stopped. Connected
// clients see a disconnect.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// InProcess is the Connect option for a client in the server's own
// process: it talks to the server over an in-memory pipe instead of a
// loopback socket, so a hand-off between two stages of one process costs
// no system call and wakes no thread through the kernel's poller. The
// server is still a real NATS server: a remote worker reaches it at
// ClientURL.
func (s *Server) InProcess() Option {
	return func(o *connOptions) { o.nats = append(o.nats, nats.InProcessServer(s.ns)) }
}
