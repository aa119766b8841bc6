package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/config"
)

// envNATSToken is the environment variable a token for --nats may come
// from: unlike a flag's value, the environment is not in the process list.
const envNATSToken = "FLOWRUN_NATS_TOKEN"

// natsAuthFlags are how flowrun run signs in to an external server. Every
// secret is read from a file or the environment, never from a flag's
// value: the command line of a process is readable by every local user.
type natsAuthFlags struct {
	creds, nkey, tokenFile string
	ca, cert, key          string
}

func (n *natsAuthFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&n.creds, "nats-creds", "", "sign in to --nats with the credentials `FILE` (user JWT and nkey seed, as nsc writes it)")
	fs.StringVar(&n.nkey, "nats-nkey", "", "sign in to --nats as the nkey user whose seed is in `FILE`")
	fs.StringVar(&n.tokenFile, "nats-token-file", "", "sign in to --nats with the token in `FILE` (or set "+envNATSToken+")")
	fs.StringVar(&n.ca, "nats-ca", "", "verify --nats's TLS certificate against the CA bundle `FILE` (turns TLS on)")
	fs.StringVar(&n.cert, "nats-cert", "", "present the client certificate `FILE` to --nats (with --nats-key)")
	fs.StringVar(&n.key, "nats-key", "", "the key `FILE` of --nats-cert")
}

func (n *natsAuthFlags) any() bool {
	return n.creds != "" || n.nkey != "" || n.tokenFile != "" || n.ca != "" || n.cert != "" || n.key != ""
}

// clientAuth reads the token (from --nats-token-file or the environment)
// and checks the files; every error is a usage error.
func (n *natsAuthFlags) clientAuth() (bus.ClientAuth, error) {
	a := bus.ClientAuth{CredsFile: n.creds, NkeySeedFile: n.nkey, CAFile: n.ca, CertFile: n.cert, KeyFile: n.key}
	env := os.Getenv(envNATSToken)
	switch {
	case n.tokenFile != "" && env != "":
		return a, fmt.Errorf("--nats-token-file and %s both give a token: choose one", envNATSToken)
	case n.tokenFile != "":
		b, err := os.ReadFile(n.tokenFile)
		if err != nil {
			return a, fmt.Errorf("--nats-token-file: %w", err)
		}
		if a.Token = strings.TrimSpace(string(b)); a.Token == "" {
			return a, fmt.Errorf("--nats-token-file %s is empty", n.tokenFile)
		}
	default:
		a.Token = env
	}
	if err := a.Check(); err != nil {
		return a, fmt.Errorf("--nats credentials: %w", err)
	}
	return a, nil
}

// connectBus connects the run to its NATS server: --nats, else the graph's
// nats.url, else an embedded server on loopback that accepts only this
// run's own connections (bus.Identity). It returns what closes the
// connection and stops the embedded server.
func connectBus(cfg *config.Config, f runFlags, log *slog.Logger) (*bus.Conn, func(), error) {
	serverURL, from := cfg.NATS.URL, "the graph's nats.url"
	if f.nats != "" {
		serverURL, from = f.nats, "--nats"
	}
	opts := []bus.Option{bus.WithName("flowrun " + cfg.Name), bus.WithLogger(log), bus.WithGrace(f.natsGrace)}
	stop := func() {}
	if serverURL == "" {
		if f.natsAuth.any() {
			return nil, nil, usageError{errors.New("--nats-creds, --nats-nkey, --nats-token-file, --nats-ca, --nats-cert and --nats-key sign in to an external server: give --nats (the embedded server has a per-run identity of its own)")}
		}
		srv, err := bus.StartEmbedded(bus.ServerOptions{Port: -1})
		if err != nil {
			return nil, nil, err
		}
		stop = srv.Shutdown
		serverURL = srv.ClientURL()
		// Every stage of this run is in this process: talk to the server
		// over an in-memory pipe (bus.Server.InProcess).
		opts = append(opts, srv.Auth(), srv.InProcess())
	} else {
		auth, err := f.natsAuth.clientAuth()
		if err != nil {
			return nil, nil, usageError{err}
		}
		if urlsHaveSecret(serverURL) {
			log.Warn("the NATS URL carries a password or token; other local users can read "+from+" (the process list, the graph file): prefer --nats-creds, --nats-nkey or --nats-token-file", "source", from)
		}
		opts = append(opts, bus.WithAuth(auth))
	}
	conn, err := bus.Connect(serverURL, opts...)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return conn, func() { conn.Close(); stop() }, nil
}

// urlsHaveSecret reports whether a server URL (or comma-separated list)
// carries a user and password or a token (a user alone, to nats.go).
func urlsHaveSecret(list string) bool {
	for _, p := range strings.Split(list, ",") {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			return true
		}
	}
	return false
}
