// Package bustest makes the credentials that tests of NATS authentication
// need: a CA with a server and a client certificate, and an operator-mode
// setup (operator, account, user) with the user's creds file. It owns
// fixtures only; nothing outside tests imports it, and it imports nothing
// of flowrun.
package bustest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// PKI are PEM files: a CA, and signed by it a certificate for 127.0.0.1
// (server) and one for a client, each with its key.
type PKI struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// NewPKI writes a fresh PKI into dir, valid for an hour.
func NewPKI(dir string) (*PKI, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flowrun test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p := &PKI{CA: filepath.Join(dir, "ca.pem")}
	if err := writePEM(p.CA, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	for i, who := range []struct {
		name      string
		cert, key *string
	}{{"server", &p.ServerCert, &p.ServerKey}, {"client", &p.ClientCert, &p.ClientKey}} {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: "flowrun test " + who.name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			return nil, err
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, err
		}
		*who.cert, *who.key = filepath.Join(dir, who.name+".pem"), filepath.Join(dir, who.name+"-key.pem")
		if err := writePEM(*who.cert, "CERTIFICATE", der); err != nil {
			return nil, err
		}
		if err := writePEM(*who.key, "EC PRIVATE KEY", kder); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// ServerConfig is a nats-server configuration block that requires TLS
// with a client certificate signed by the CA.
func (p *PKI) ServerConfig() string {
	return fmt.Sprintf("tls {\n  cert_file: %q\n  key_file: %q\n  ca_file: %q\n  verify: true\n}\n", p.ServerCert, p.ServerKey, p.CA)
}

// Operator is an operator-mode setup: one operator, one account it signed,
// one user of that account.
type Operator struct {
	OperatorJWT, AccountPub, AccountJWT string
	// Creds is the user's credentials file content (JWT and seed).
	Creds []byte
}

// NewOperator generates an Operator.
func NewOperator() (*Operator, error) {
	okp, err := nkeys.CreateOperator()
	if err != nil {
		return nil, err
	}
	akp, err := nkeys.CreateAccount()
	if err != nil {
		return nil, err
	}
	ukp, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	opub, _ := okp.PublicKey()
	apub, _ := akp.PublicKey()
	upub, _ := ukp.PublicKey()
	useed, _ := ukp.Seed()
	o := &Operator{AccountPub: apub}
	if o.OperatorJWT, err = jwt.NewOperatorClaims(opub).Encode(okp); err != nil {
		return nil, err
	}
	if o.AccountJWT, err = jwt.NewAccountClaims(apub).Encode(okp); err != nil {
		return nil, err
	}
	ujwt, err := jwt.NewUserClaims(upub).Encode(akp)
	if err != nil {
		return nil, err
	}
	if o.Creds, err = jwt.FormatUserConfig(ujwt, useed); err != nil {
		return nil, err
	}
	return o, nil
}

// ServerOptions configures an in-process nats-server to trust the
// operator and know the account.
func (o *Operator) ServerOptions() (*server.Options, error) {
	oc, err := jwt.DecodeOperatorClaims(o.OperatorJWT)
	if err != nil {
		return nil, err
	}
	res := &server.MemAccResolver{}
	if err := res.Store(o.AccountPub, o.AccountJWT); err != nil {
		return nil, err
	}
	return &server.Options{TrustedOperators: []*jwt.OperatorClaims{oc}, AccountResolver: res}, nil
}

// ServerConfig is the same as a nats-server configuration file.
func (o *Operator) ServerConfig() string {
	return fmt.Sprintf("operator: %s\nresolver: MEMORY\nresolver_preload: {\n  %s: %s\n}\n", o.OperatorJWT, o.AccountPub, o.AccountJWT)
}
