package bus

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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
}

// Server is an in-process nats-server.
type Server struct {
	ns *server.Server
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
	sopts := &server.Options{
		Host:   host,
		Port:   port,
		NoLog:  !opts.Logging,
		NoSigs: true, // signals belong to the flowrun process, not to the server
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
	return &Server{ns: ns}, nil
}

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
