package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Pin records that the plugin binary at path must have the SHA-256 sum
// (64 hex digits) before the host runs it: Check refuses a binary whose
// sum differs, and launching it checks again, with go-plugin's
// SecureConfig, right before it runs. A binary the host runs without a
// pin runs with a warning, logged once per binary. Pin a path twice with
// different sums and the binary is refused.
func (h *Host) Pin(path, sum string) error {
	want, err := ParseSHA256(sum)
	if err != nil {
		return fmt.Errorf("plugin %q: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("plugin %q: %w", path, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pins == nil {
		h.pins = make(map[string][]string)
	}
	if !slices.Contains(h.pins[abs], want) {
		h.pins[abs] = append(h.pins[abs], want)
	}
	return nil
}

// ParseSHA256 checks a pin: 64 hex digits, upper or lower case. It
// returns them in lower case.
func ParseSHA256(sum string) (string, error) {
	b, err := hex.DecodeString(sum)
	if err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("sha256 %q: want %d hex digits (the output of sha256sum, or flowrun plugins lock)", sum, 2*sha256.Size)
	}
	return strings.ToLower(sum), nil
}

// FileSHA256 is the SHA-256 sum of the file at path, in hex.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// pinned reports whether the binary at path (absolute) has a pin.
func (h *Host) pinned(path string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.pins[path]) > 0
}

// checkPin refuses the binary at path (absolute) if its sum differs from
// a pin, and returns the pin it matched ("" when unpinned) and its sum.
func (h *Host) checkPin(kind plugin.Kind, path string) (pin, sum string, err error) {
	h.mu.Lock()
	pins := slices.Clone(h.pins[path])
	h.mu.Unlock()
	sum, err = FileSHA256(path)
	if err != nil {
		return "", "", fmt.Errorf("%s plugin %q: %w", kind, path, err)
	}
	for _, p := range pins {
		if p != sum {
			return "", sum, &RefusedError{Kind: kind, Path: path,
				Err: refused(ErrPinMismatch, "it is %s, the pin %s; not running it", sum, p)}
		}
	}
	if len(pins) > 0 {
		pin = pins[0]
	}
	return pin, sum, nil
}

// verify is checkPin before a launch: the SecureConfig that makes go-plugin
// check the pin again right before it runs the binary, or, for an
// unpinned binary, nil and a warning the first time the host runs it.
func (h *Host) verify(kind plugin.Kind, path string) (*goplugin.SecureConfig, error) {
	pin, sum, err := h.checkPin(kind, path)
	if err != nil {
		return nil, err
	}
	if pin == "" {
		h.mu.Lock()
		first := !h.warned[path]
		if h.warned == nil {
			h.warned = make(map[string]bool)
		}
		h.warned[path] = true
		h.mu.Unlock()
		if first {
			h.logger.Warn(fmt.Sprintf("%s plugin %s is not pinned: running it unverified (sha256 %s; `flowrun plugins lock GRAPH` pins it)", kind, path, sum))
		}
		return nil, nil
	}
	want, _ := hex.DecodeString(pin) // Pin checked it
	return &goplugin.SecureConfig{Checksum: want, Hash: sha256.New()}, nil
}
