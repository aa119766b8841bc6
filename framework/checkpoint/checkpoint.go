// Package checkpoint owns the on-disk format of a run's checkpoint: what a
// run needs to continue from a batch boundary, written atomically (a
// temporary directory, every file and the directory fsynced, then one
// rename), every file under a SHA-256 that the manifest lists, and the
// manifest under a SHA-256 of its own. Open verifies all of it before
// anything is read; a run is refused a checkpoint of another graph, seed,
// config or format (Identity.Check).
//
// The package knows nothing of what the parts mean: the engine names them
// and encodes them (EncodeRows for host rows; its own JSON for the rest).
// It imports no other framework package.
package checkpoint

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FormatVersion is the version of the format this package writes and
// reads. A checkpoint of another version is refused.
const FormatVersion = 1

// ManifestName is the manifest's file name inside a checkpoint directory.
const ManifestName = "manifest"

// magic starts the manifest's first line: "flowrun-checkpoint sha256=HEX".
const magic = "flowrun-checkpoint sha256="

// ErrCorrupt is wrapped by every error that says a checkpoint's bytes are
// not what was written: a missing or extra file, a size or SHA-256 that
// differs, a manifest that does not parse.
var ErrCorrupt = errors.New("checkpoint is corrupt")

// ErrMismatch is wrapped by Identity.Check's errors: the checkpoint is
// whole but of another graph, seed, config or format.
var ErrMismatch = errors.New("checkpoint does not match this run")

// Identity is what makes a checkpoint the one a run may resume from.
type Identity struct {
	// Graph is the graph's name (for messages).
	Graph string `json:"graph"`
	// GraphHash is a SHA-256 over the graph's stages and edges.
	GraphHash string `json:"graph_hash"`
	// Seed is the run's seed.
	Seed uint64 `json:"seed"`
	// ConfigDigest is a SHA-256 over the resolved config (the graph file
	// with every --set applied, over the defaults).
	ConfigDigest string `json:"config_digest"`
}

// Check says whether a run of identity want may resume from a checkpoint
// of identity got, naming the first difference.
func (got Identity) Check(want Identity) error {
	switch {
	case got.GraphHash != want.GraphHash:
		return fmt.Errorf("%w: it is of graph %q (hash %.12s), this run is graph %q (hash %.12s)", ErrMismatch, got.Graph, got.GraphHash, want.Graph, want.GraphHash)
	case got.Seed != want.Seed:
		return fmt.Errorf("%w: it was written with seed %d, this run has seed %d", ErrMismatch, got.Seed, want.Seed)
	case got.ConfigDigest != want.ConfigDigest:
		return fmt.Errorf("%w: its config (digest %.12s) differs from this run's (%.12s): resume with the same graph file and --set flags", ErrMismatch, got.ConfigDigest, want.ConfigDigest)
	}
	return nil
}

// File is one part of a checkpoint as the manifest lists it.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Manifest describes a checkpoint.
type Manifest struct {
	Format int `json:"format"`
	Identity
	// Batch is the boundary: batches 0 … Batch−1 have left the graph,
	// and every stage's part was taken as it stood after batch Batch−1.
	// A resumed run starts at Batch.
	Batch uint64 `json:"batch"`
	// Total is the run's batches (training and held-out).
	Total uint64 `json:"total"`
	// Written is when the checkpoint was written (information only).
	Written time.Time `json:"written"`
	// Notes says what was saved and how (e.g. how the cache restarts).
	Notes map[string]string `json:"notes,omitempty"`
	Files []File            `json:"files"`
}

// Part is a file of a checkpoint to write: Write streams its bytes.
type Part struct {
	Name  string
	Write func(w io.Writer) error
}

// Checkpoint is a verified checkpoint: its manifest and its parts' bytes.
type Checkpoint struct {
	Dir string
	Manifest
	parts map[string][]byte
}

// Part returns the bytes of the named part, or false when the checkpoint
// has none.
func (c *Checkpoint) Part(name string) ([]byte, bool) {
	b, ok := c.parts[name]
	return b, ok
}

// Name is the directory name of the checkpoint at batch: ckpt-BATCH,
// zero-padded so that names sort by batch.
func Name(batch uint64) string { return fmt.Sprintf("ckpt-%012d", batch) }

// Write writes a checkpoint of m and parts under root as root/Name(m.Batch)
// atomically: into a temporary directory beside it, every file fsynced,
// the directory fsynced, renamed into place and root fsynced. A crash at
// any point leaves either no checkpoint of that batch or a whole one. It
// fills m.Format and m.Files and returns the checkpoint's directory.
func Write(root string, m Manifest, parts []Part) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	// The writer's pid in the name lets Prune tell a dead writer's
	// leftovers from another live run's write in progress.
	tmp, err := os.MkdirTemp(root, fmt.Sprintf("%s%s-%d-", tmpPrefix, Name(m.Batch), os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; a failure's leftovers otherwise
	m.Format, m.Files = FormatVersion, nil
	for _, p := range parts {
		if !validName(p.Name) {
			return "", fmt.Errorf("checkpoint: bad part name %q", p.Name)
		}
		f, err := writeFile(filepath.Join(tmp, p.Name), p.Write)
		if err != nil {
			return "", fmt.Errorf("checkpoint part %s: %w", p.Name, err)
		}
		f.Name = p.Name
		m.Files = append(m.Files, f)
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", fmt.Errorf("checkpoint manifest: %w", err)
	}
	sum := sha256.Sum256(body)
	head := magic + hex.EncodeToString(sum[:]) + "\n"
	if _, err := writeFile(filepath.Join(tmp, ManifestName), func(w io.Writer) error {
		_, err := io.WriteString(w, head+string(body))
		return err
	}); err != nil {
		return "", fmt.Errorf("checkpoint manifest: %w", err)
	}
	if err := syncDir(tmp); err != nil {
		return "", err
	}
	dst := filepath.Join(root, Name(m.Batch))
	if err := os.RemoveAll(dst); err != nil { // an older one of the same batch
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return dst, syncDir(root)
}

func validName(n string) bool {
	return n != "" && n != ManifestName && !strings.ContainsAny(n, `/\`) && !strings.HasPrefix(n, ".")
}

// writeFile writes path through write, fsyncs it, and returns its size
// and SHA-256.
func writeFile(path string, write func(io.Writer) error) (File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return File{}, err
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	err = write(cw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return File{}, err
	}
	return File{Size: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("checkpoint: fsync %s: %w", dir, err)
	}
	return nil
}

// Open finds the checkpoint at path (a checkpoint directory, or a root
// Write wrote into, whose latest checkpoint is taken) and verifies it:
// the manifest's own SHA-256, its format, and every file's size and
// SHA-256, with no file missing or extra. Every error wraps ErrCorrupt,
// names the file, and fits on one line.
func Open(path string) (*Checkpoint, error) {
	dir, err := locate(path)
	if err != nil {
		return nil, err
	}
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Dir: dir, Manifest: *m, parts: make(map[string][]byte, len(m.Files))}
	listed := map[string]bool{ManifestName: true}
	for _, f := range m.Files {
		if !validName(f.Name) || listed[f.Name] {
			return nil, fmt.Errorf("%w: %s: manifest lists file %q twice or by a bad name", ErrCorrupt, dir, f.Name)
		}
		listed[f.Name] = true
		b, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
		}
		if int64(len(b)) != f.Size {
			return nil, fmt.Errorf("%w: %s: %s is %d bytes, the manifest says %d (truncated?)", ErrCorrupt, dir, f.Name, len(b), f.Size)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != f.SHA256 {
			return nil, fmt.Errorf("%w: %s: %s has another SHA-256 than the manifest says", ErrCorrupt, dir, f.Name)
		}
		c.parts[f.Name] = b
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	for _, e := range entries {
		if !listed[e.Name()] {
			return nil, fmt.Errorf("%w: %s: file %s is not in the manifest", ErrCorrupt, dir, e.Name())
		}
	}
	return c, nil
}

// locate is path itself when it holds a manifest, else the latest
// checkpoint (highest batch) directly under it.
func locate(path string) (string, error) {
	if _, err := os.Stat(filepath.Join(path, ManifestName)); err == nil {
		return path, nil
	}
	found, err := List(path)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if len(found) == 0 {
		return "", fmt.Errorf("checkpoint: %s holds no checkpoint (no %s, no ckpt-N directory)", path, ManifestName)
	}
	return found[len(found)-1].Dir, nil
}

// Listed is a checkpoint directory found under a root: its batch and
// its path.
type Listed struct {
	Batch uint64
	Dir   string
}

// List is the checkpoints directly under root (its ckpt-N directories),
// by ascending batch; none when root does not exist. It opens none of
// them.
func List(root string) ([]Listed, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var found []Listed
	for _, e := range entries {
		if b, ok := parseName(e); ok {
			found = append(found, Listed{Batch: b, Dir: filepath.Join(root, e.Name())})
		}
	}
	slices.SortFunc(found, func(a, b Listed) int { return cmp.Compare(a.Batch, b.Batch) })
	return found, nil
}

// parseName is the batch of a checkpoint directory's entry, ok false for
// anything else (a temporary directory, a stray file).
func parseName(e os.DirEntry) (uint64, bool) {
	rest, ok := strings.CutPrefix(e.Name(), "ckpt-")
	if !ok || !e.IsDir() {
		return 0, false
	}
	b, err := strconv.ParseUint(rest, 10, 64)
	return b, err == nil
}

func readManifest(dir string) (*Manifest, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	}
	head, body, ok := bytes.Cut(raw, []byte("\n"))
	hexSum, okMagic := strings.CutPrefix(string(head), magic)
	if !ok || !okMagic {
		return nil, fmt.Errorf("%w: %s: the manifest does not start with %q", ErrCorrupt, dir, magic)
	}
	if sum := sha256.Sum256(body); hexSum != hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("%w: %s: the manifest has another SHA-256 than its first line says", ErrCorrupt, dir)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %s: manifest: %v", ErrCorrupt, dir, err)
	}
	if m.Format != FormatVersion {
		return nil, fmt.Errorf("%w: %s: format version %d, this flowrun reads version %d", ErrMismatch, dir, m.Format, FormatVersion)
	}
	return &m, nil
}

// tmpPrefix starts the name of a checkpoint being written:
// .tmp-ckpt-BATCH-PID-RANDOM.
const tmpPrefix = ".tmp-"

// writerGone reports whether the process whose pid a temporary
// directory's name carries is gone (a Write it never finished).
func writerGone(name string) bool {
	parts := strings.Split(strings.TrimPrefix(name, tmpPrefix), "-")
	if len(parts) != 4 {
		return false
	}
	pid, err := strconv.Atoi(parts[2])
	if err != nil || pid <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// Prune removes every checkpoint under root but the newest keep, and the
// temporary directories of Writes whose process died before the rename.
func Prune(root string, keep int) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) && writerGone(e.Name()) {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				return err
			}
		}
	}
	found, err := List(root)
	if err != nil {
		return err
	}
	for len(found) > keep {
		if err := os.RemoveAll(found[0].Dir); err != nil {
			return err
		}
		found = found[1:]
	}
	return nil
}

// hashOf is a SHA-256 of its parts, each length-prefixed so that no two
// lists hash alike.
func hashOf(parts ...string) string {
	var h hash.Hash = sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// HashOf is the SHA-256 identity helpers use: over the strings, each
// length-prefixed.
func HashOf(parts ...string) string { return hashOf(parts...) }
