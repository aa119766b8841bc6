// Package record owns the on-disk format of a run's record (flowrun run
// --record DIR): the run's batch stream — each batch's lookups and the
// serving policy's plan decisions for them (hits, slots, victims) —
// varint/delta encoded and Huffman-coded (deflate) batch by batch, for a bounded window
// of the last batches, beside checkpoints (framework/checkpoint) at a
// cadence, so that flowrun replay can re-run any part of the window and
// check that it makes the same decisions and ends with the same digest.
//
// A record is verified whole before anything is read: the manifest under
// a SHA-256 of its own, the stream's size and SHA-256 as the manifest
// says, every frame's CRC-32C. Replay refuses a record of another graph,
// seed or config by its checkpoint.Identity.
//
// The package imports framework/checkpoint only (for Identity); the
// engine hands it batches (engine.Options.Record), cmd/flowrun writes and
// opens records.
package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/flowrun/flowrun/framework/atomicfile"
	"github.com/flowrun/flowrun/framework/checkpoint"
)

// FormatVersion is the version of the format written and read.
const FormatVersion = 1

// File names inside a record directory.
const (
	ManifestName = "record"
	StreamName   = "stream"
	// CheckpointsDir holds the record's checkpoints (framework/checkpoint).
	CheckpointsDir = "checkpoints"
)

const magic = "flowrun-record sha256="

// ErrCorrupt is wrapped by every error that says a record's bytes are not
// what was written.
var ErrCorrupt = errors.New("record is corrupt")

// Manifest describes a record.
type Manifest struct {
	Format int `json:"format"`
	// Identity is the recorded run's: graph hash, seed, config digest.
	checkpoint.Identity
	// GraphFile and Sets are how the run was started (the graph file,
	// absolute, and every --set), for replay to start it again.
	GraphFile string   `json:"graph_file"`
	Sets      []string `json:"sets,omitempty"`
	// Policy is the serving cache's plugin ("" without a plan stage).
	Policy string `json:"policy,omitempty"`
	// Lookups says whether the stream keeps the batches' IDs; without
	// them a replay regenerates them from the seed and the batch's
	// sequence (the data source's position), and checks the plan only.
	Lookups bool `json:"lookups"`
	// Window is the most batches the stream keeps (the last ones).
	Window uint64 `json:"window"`
	// CheckpointEvery is the checkpoints' cadence in batches.
	CheckpointEvery uint64 `json:"checkpoint_every"`
	// First and Batches: the stream holds batches First … First+Batches−1.
	First   uint64 `json:"first"`
	Batches uint64 `json:"batches"`
	// Total is the run's batches, training and held-out.
	Total uint64 `json:"total"`
	// Digest is the run's model digest; empty when it failed (Failed).
	Digest string `json:"digest,omitempty"`
	Failed string `json:"failed,omitempty"`
	// StreamBytes and StreamSHA256 are the stream file's; RawBytes is
	// what its batches hold as the run's arrays (int64 IDs, slots and
	// victims, a byte per hit flag): the compression's reference.
	StreamBytes  int64     `json:"stream_bytes"`
	StreamSHA256 string    `json:"stream_sha256"`
	RawBytes     int64     `json:"raw_bytes"`
	Written      time.Time `json:"written"`
}

// Writer keeps the encoded frames of the last Window batches a run hands
// it; Write puts them on disk. Batch copies the batch and returns: one
// goroutine of the Writer's encodes and deflates it, off the stage that
// hands it in (the plan stage, on the serving path), at most
// writerQueue batches behind. Safe for concurrent use.
type Writer struct {
	window  int
	lookups bool
	queue   chan Batch
	done    chan struct{}
	once    sync.Once

	mu      sync.Mutex
	last    uint64
	started bool
	err     error // the first encoding error
	frames  [][]byte
	seqs    []uint64
	raw     []int64
}

// writerQueue is how many batches the encoder may fall behind before
// Batch waits for it (each a copy of a batch's arrays).
const writerQueue = 4

// NewWriter keeps the last window batches (at least 1), their IDs only
// when lookups is set.
func NewWriter(window int, lookups bool) *Writer {
	w := &Writer{window: max(window, 1), lookups: lookups, queue: make(chan Batch, writerQueue), done: make(chan struct{})}
	go w.encodeAll()
	return w
}

// Batch copies b for the encoder, which keeps it and drops the oldest
// beyond the window. Batches must come in sequence.
func (w *Writer) Batch(b Batch) error {
	w.mu.Lock()
	if w.started && b.Seq != w.last+1 {
		defer w.mu.Unlock()
		return fmt.Errorf("record: batch %d after batch %d (the stream is kept in sequence)", b.Seq, w.last)
	}
	w.started, w.last = true, b.Seq
	err := w.err
	w.mu.Unlock()
	if err != nil {
		return err
	}
	b.IDs, b.Hits, b.Slots, b.Victims = slices.Clone(b.IDs), slices.Clone(b.Hits), slices.Clone(b.Slots), slices.Clone(b.Victims)
	w.queue <- b
	return nil
}

func (w *Writer) encodeAll() {
	defer close(w.done)
	var enc encoder
	for b := range w.queue {
		f, err := encode(b, w.lookups, &enc)
		w.mu.Lock()
		if err != nil && w.err == nil {
			w.err = err
		}
		if err == nil {
			w.frames, w.seqs = append(w.frames, f), append(w.seqs, b.Seq)
			w.raw = append(w.raw, int64(len(b.IDs))*8+int64(len(b.Hits))+int64(len(b.Slots))*8+int64(len(b.Victims))*8)
			if len(w.frames) > w.window {
				w.frames, w.seqs, w.raw = w.frames[1:], w.seqs[1:], w.raw[1:]
			}
		}
		w.mu.Unlock()
	}
}

// Write writes the stream and the manifest m (completed with the
// stream's figures) into dir, the stream first, each file fsynced and
// renamed into place, so that a record is either the old one or the new
// one. It returns the manifest as written.
//
// Write ends the Writer: it takes no batch after.
func (w *Writer) Write(dir string, m Manifest) (Manifest, error) {
	w.once.Do(func() { close(w.queue) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return m, w.err
	}
	var stream bytes.Buffer
	for _, f := range w.frames {
		stream.Write(f)
	}
	m.Format, m.Batches, m.RawBytes, m.Lookups = FormatVersion, uint64(len(w.frames)), 0, w.lookups
	if len(w.seqs) > 0 {
		m.First = w.seqs[0]
	}
	for _, r := range w.raw {
		m.RawBytes += r
	}
	sum := sha256.Sum256(stream.Bytes())
	m.StreamBytes, m.StreamSHA256 = int64(stream.Len()), hex.EncodeToString(sum[:])
	m.Written = time.Now().UTC()
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, fmt.Errorf("record manifest: %w", err)
	}
	msum := sha256.Sum256(body)
	head := magic + hex.EncodeToString(msum[:]) + "\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return m, fmt.Errorf("record: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, StreamName), stream.Bytes()); err != nil {
		return m, err
	}
	return m, writeAtomic(filepath.Join(dir, ManifestName), append([]byte(head), body...))
}

func writeAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// Record is a verified record: its manifest and its frames, kept
// compressed and decoded on demand (a window of a large run's batches
// does not fit in memory decoded).
type Record struct {
	Dir string
	Manifest
	frames [][]byte
}

// Open reads and verifies the record in dir: the manifest's own SHA-256
// and format, the stream's size and SHA-256, and every frame (its
// CRC-32C, its payload, batches in sequence from First). Every error
// wraps ErrCorrupt (a format of another version: checkpoint.ErrMismatch)
// and fits on one line.
func Open(dir string) (*Record, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, StreamName))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	}
	if int64(len(data)) != m.StreamBytes {
		return nil, fmt.Errorf("%w: %s: %s is %d bytes, the record says %d (truncated?)", ErrCorrupt, dir, StreamName, len(data), m.StreamBytes)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != m.StreamSHA256 {
		return nil, fmt.Errorf("%w: %s: %s has another SHA-256 than the record says", ErrCorrupt, dir, StreamName)
	}
	rec := &Record{Dir: dir, Manifest: *m}
	r := bytes.NewReader(data)
	for i := uint64(0); r.Len() > 0; i++ {
		start := len(data) - r.Len()
		b, err := decodeFrame(r)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: frame %d at byte %d: %v", ErrCorrupt, dir, i, start, err)
		}
		if b.Seq != m.First+i {
			return nil, fmt.Errorf("%w: %s: frame %d is batch %d, want %d", ErrCorrupt, dir, i, b.Seq, m.First+i)
		}
		rec.frames = append(rec.frames, data[start:len(data)-r.Len()])
	}
	if uint64(len(rec.frames)) != m.Batches {
		return nil, fmt.Errorf("%w: %s: the stream holds %d batches, the record says %d", ErrCorrupt, dir, len(rec.frames), m.Batches)
	}
	return rec, nil
}

func readManifest(dir string) (*Manifest, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	}
	head, body, ok := bytes.Cut(raw, []byte("\n"))
	hexSum, okMagic := bytes.CutPrefix(head, []byte(magic))
	if !ok || !okMagic {
		return nil, fmt.Errorf("%w: %s: %s does not start with %q", ErrCorrupt, dir, ManifestName, magic)
	}
	if sum := sha256.Sum256(body); string(hexSum) != hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("%w: %s: %s has another SHA-256 than its first line says (truncated?)", ErrCorrupt, dir, ManifestName)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %s: %s: %v", ErrCorrupt, dir, ManifestName, err)
	}
	if m.Format != FormatVersion {
		return nil, fmt.Errorf("%w: %s: format version %d, this flowrun reads version %d", checkpoint.ErrMismatch, dir, m.Format, FormatVersion)
	}
	return &m, nil
}

// Has says whether the stream holds batch seq.
func (r *Record) Has(seq uint64) bool { return seq >= r.First && seq-r.First < uint64(len(r.frames)) }

// Batch decodes batch seq (Has(seq) must hold).
func (r *Record) Batch(seq uint64) (Batch, error) {
	if !r.Has(seq) {
		return Batch{}, fmt.Errorf("record: batch %d is not in the stream (batches %d … %d)", seq, r.First, r.First+uint64(len(r.frames))-1)
	}
	return decodeFrame(bytes.NewReader(r.frames[seq-r.First]))
}

// End is the batch after the stream's last.
func (r *Record) End() uint64 { return r.First + uint64(len(r.frames)) }
