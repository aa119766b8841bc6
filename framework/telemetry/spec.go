package telemetry

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ErrBadSpec is returned (wrapped) for an exporter spec that is not one of
// the valid forms.
var ErrBadSpec = errors.New("want one of: none, stdout, file:PATH, otlp-grpc://HOST:PORT, otlp-http://HOST:PORT[/PATH]")

// exporter kinds a spec can name.
const (
	kindNone     = "none"
	kindStdout   = "stdout"
	kindFile     = "file"
	kindOTLPGRPC = "otlp-grpc"
	kindOTLPHTTP = "otlp-http"
)

// exporterSpec is a parsed exporter spec.
type exporterSpec struct {
	kind     string
	path     string // file
	endpoint string // otlp: host:port
	urlPath  string // otlp-http: optional path instead of /v1/traces
}

// ValidateSpec reports whether s is a valid exporter spec, so configuration
// can reject a bad one before anything runs.
func ValidateSpec(s string) error {
	_, err := parseSpec(s)
	return err
}

func parseSpec(s string) (exporterSpec, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == kindNone:
		return exporterSpec{kind: kindNone}, nil
	case s == kindStdout:
		return exporterSpec{kind: kindStdout}, nil
	case strings.HasPrefix(s, kindFile+":"):
		p := strings.TrimPrefix(s, kindFile+":")
		if p == "" {
			return exporterSpec{}, fmt.Errorf("telemetry: exporter %q: empty file path: %w", s, ErrBadSpec)
		}
		return exporterSpec{kind: kindFile, path: p}, nil
	case strings.HasPrefix(s, kindOTLPGRPC+"://"), strings.HasPrefix(s, kindOTLPHTTP+"://"):
		u, err := url.Parse(s)
		if err != nil {
			return exporterSpec{}, fmt.Errorf("telemetry: exporter %q: %v: %w", s, err, ErrBadSpec)
		}
		host, port, err := net.SplitHostPort(u.Host)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return exporterSpec{}, fmt.Errorf("telemetry: exporter %q: endpoint must be HOST:PORT, PORT from 1 to 65535: %w", s, ErrBadSpec)
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return exporterSpec{}, fmt.Errorf("telemetry: exporter %q: only HOST:PORT (and a path for otlp-http) is allowed: %w", s, ErrBadSpec)
		}
		sp := exporterSpec{kind: u.Scheme, endpoint: u.Host}
		if p := u.EscapedPath(); p != "" && p != "/" {
			if sp.kind == kindOTLPGRPC {
				return exporterSpec{}, fmt.Errorf("telemetry: exporter %q: otlp-grpc takes no path: %w", s, ErrBadSpec)
			}
			sp.urlPath = p
		}
		return sp, nil
	default:
		return exporterSpec{}, fmt.Errorf("telemetry: unknown exporter %q: %w", s, ErrBadSpec)
	}
}
