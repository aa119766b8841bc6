package bus

import (
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Identity is the per-run secret of an embedded server: an nkey user
// generated in this process. The server knows only the public key; a
// client proves it holds the seed by signing the server's nonce, so the
// secret never crosses the socket, and it never leaves the process (no
// file, no command line, no environment). Another local user can reach
// the loopback port but can neither subscribe nor publish without it.
type Identity struct {
	kp  nkeys.KeyPair
	pub string
}

// NewIdentity generates a fresh nkey user.
func NewIdentity() (*Identity, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("bus: generate nkey user: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("bus: nkey public key: %w", err)
	}
	return &Identity{kp: kp, pub: pub}, nil
}

// PublicKey is the identity's public nkey (U…), what a server is
// configured with.
func (id *Identity) PublicKey() string { return id.pub }

// Option is the Connect option that authenticates as the identity.
func (id *Identity) Option() Option {
	return func(o *connOptions) {
		o.nats = append(o.nats, nats.Nkey(id.pub, id.kp.Sign))
	}
}

// ClientAuth is how a connection authenticates to an external server and
// verifies it. Secrets come from files (or, for a token, the caller reads
// it from a file or the environment): never from a command line, which
// every local user can read in the process list. The zero value adds
// nothing (a user and password in the URL still work).
type ClientAuth struct {
	// Token is a server's authorization token.
	Token string
	// CredsFile is a NATS credentials file (a user JWT and its nkey seed,
	// as `nsc` writes it).
	CredsFile string
	// NkeySeedFile holds an nkey user seed (SU…).
	NkeySeedFile string
	// CAFile is a PEM bundle the server's certificate must chain to;
	// setting it requires TLS.
	CAFile string
	// CertFile and KeyFile are a client certificate and its key, for a
	// server that verifies clients (tls { verify: true }).
	CertFile, KeyFile string
}

// Check refuses combinations that cannot mean what the user wants and
// files that are not there.
func (a ClientAuth) Check() error {
	n := 0
	for _, s := range []string{a.Token, a.CredsFile, a.NkeySeedFile} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return errors.New("a token, a creds file and an nkey seed file are alternatives: give one")
	}
	if (a.CertFile == "") != (a.KeyFile == "") {
		return errors.New("a client certificate needs both its certificate and its key file")
	}
	for _, f := range []string{a.CredsFile, a.NkeySeedFile, a.CAFile, a.CertFile, a.KeyFile} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return err
		}
	}
	return nil
}

// options are the nats.go options for a.
func (a ClientAuth) options() ([]nats.Option, error) {
	if err := a.Check(); err != nil {
		return nil, err
	}
	var opts []nats.Option
	switch {
	case a.Token != "":
		opts = append(opts, nats.Token(a.Token))
	case a.CredsFile != "":
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	case a.NkeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(a.NkeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nkey seed %s: %w", a.NkeySeedFile, err)
		}
		opts = append(opts, o)
	}
	if a.CAFile != "" {
		opts = append(opts, nats.RootCAs(a.CAFile))
	}
	if a.CertFile != "" {
		opts = append(opts, nats.ClientCert(a.CertFile, a.KeyFile))
	}
	return opts, nil
}

// WithAuth authenticates the connection (and verifies the server) as a
// says. Connect reports a missing file or a bad combination before it
// dials.
func WithAuth(a ClientAuth) Option {
	return func(o *connOptions) {
		opts, err := a.options()
		if err != nil {
			o.err = errors.Join(o.err, err)
			return
		}
		o.nats = append(o.nats, opts...)
	}
}
