package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/sdk/region"
)

// The data plane across hosts. A batch's header names its arrays by
// region handle; on the run's host every process maps the run's batch
// buffers (zero-copy). A process on another host (a worker whose host
// label differs from the run's) cannot: it keeps a buffer of its own per
// buffer of the run's (a mirror), and an edge between processes that do
// not share the buffer (byValue) carries the batch's arrays by value
// before its header: the pages that hold data in chunks of at most the
// server's max_payload, the all-zero pages as ranges to clear, each a
// NATS request acknowledged once written into the receiver's buffer, so
// the header (published after the last ack) always finds its arrays in
// place. The header on the wire always names the run's buffers; a mirror
// translates them to its own on receipt and back when it forwards.
// Stages and plugins see a batch as always.

// Headers of a chunk of a batch's arrays.
const (
	hdrBuffer = "Flowrun-Buffer" // the run's buffer the bytes belong to
	hdrOffset = "Flowrun-Offset" // where in it
	hdrZeros  = "Flowrun-Zeros"  // the data are (offset, length) ranges to clear
)

// chunkSlack is what a chunk leaves of max_payload for its headers.
const chunkSlack = 1024

// chunkWait bounds the wait for a consumer process's data subscription
// (it subscribes as it is welcomed).
const chunkWait = 30 * time.Second

// edgeTraffic counts what crossed one edge by value.
type edgeTraffic struct {
	batches, bytes, messages atomic.Int64
	ns                       atomic.Int64 // wall time spent sending
}

// transport is a process's side of the data plane.
type transport struct {
	// mirror is set in a process on another host than the run's.
	mirror bool
	size   int64 // a batch buffer's size (the layout's)

	mu      sync.Mutex
	local   map[string]*region.Region // the run's buffer name → mirror
	origin  map[string]string         // mirror name → the run's buffer name
	traffic map[string]*edgeTraffic   // graph subject → counts
	// arrays is, per graph subject carried by value, the arrays that
	// cross it (edgeArrays); nil: all of them.
	arrays map[string]map[string]bool
	subs   []*nats.Subscription
}

// consumerOf is the stage reading graph subject s, "" if none.
func (r *run) consumerOf(s string) string {
	for _, gn := range r.opts.Graph.Nodes {
		if gn.In == s {
			return gn.Name
		}
	}
	return ""
}

// producerOf is the stage writing graph subject s.
func (r *run) producerOf(s string) string {
	for _, gn := range r.opts.Graph.Nodes {
		for _, out := range gn.Out {
			if out == s {
				return gn.Name
			}
		}
	}
	return ""
}

// byValue reports whether the edge from stage p to stage c carries arrays
// by value: they run in different processes that do not share the run's
// buffers (different hosts, or both on a host other than the run's).
func (r *run) byValue(p, c string) bool {
	if r.hosts == nil || p == "" || c == "" {
		return false
	}
	place := r.opts.Graph.Config.Placement
	if place.WorkerOf(p) == place.WorkerOf(c) {
		return false
	}
	hp, hc := r.hosts[p], r.hosts[c]
	return hp != hc || hp != r.hosts[r.runStage()]
}

// runStage is a stage that runs in the run's process (a source), whose
// host is the run's.
func (r *run) runStage() string {
	for _, gn := range r.opts.Graph.Nodes {
		if gn.In == "" {
			return gn.Name
		}
	}
	return ""
}

// edgeArrays are the arrays that must cross graph subject s by value:
// those a stage at or upstream of its producer declares it produces, and
// a stage at or downstream of its consumer declares it consumes (what the
// far side has yet to write, or never reads, need not travel; the
// graph refuses a stage that consumes an array nothing upstream
// produces). Nil, all arrays, when the stages declare no fields.
func (r *run) edgeArrays(s string) map[string]bool {
	g := r.opts.Graph
	declared := false
	byName := map[string]int{}
	for i, gn := range g.Nodes {
		byName[gn.Name] = i
		declared = declared || len(gn.Produces) > 0 || len(gn.Consumes) > 0
	}
	if !declared {
		return nil
	}
	// walk visits name and every stage it reaches through next.
	var walk func(name string, next func(string) []string, seen map[string]bool)
	walk = func(name string, next func(string) []string, seen map[string]bool) {
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		for _, n := range next(name) {
			walk(n, next, seen)
		}
	}
	up, down := map[string]bool{}, map[string]bool{}
	walk(r.producerOf(s), func(n string) []string {
		return []string{r.producerOf(g.Nodes[byName[n]].In)}
	}, up)
	walk(r.consumerOf(s), func(n string) []string {
		var outs []string
		for _, o := range g.Nodes[byName[n]].Out {
			outs = append(outs, r.consumerOf(o))
		}
		return outs
	}, down)
	produced, out := map[string]bool{}, map[string]bool{}
	for name := range up {
		for _, f := range g.Nodes[byName[name]].Produces {
			if f.Kind() == batch.ArrayField { // a stat may share an array's name
				produced[f.Name()] = true
			}
		}
	}
	for name := range down {
		for _, f := range g.Nodes[byName[name]].Consumes {
			if produced[f.Name()] && f.Kind() == batch.ArrayField {
				out[f.Name()] = true
			}
		}
	}
	return out
}

// startTransport readies the data plane once the hosts are known: a
// process on another host than the run's mirrors its buffers, and every
// input edge that carries arrays by value is subscribed to.
func (r *run) startTransport() error {
	if r.hosts == nil {
		return nil
	}
	t := &transport{local: map[string]*region.Region{}, origin: map[string]string{}, traffic: map[string]*edgeTraffic{}}
	t.size = max(r.shape.Layout.Size, 64)
	for _, n := range r.nodes {
		if n.remote == "" && r.hosts[n.Name] != r.hosts[r.runStage()] {
			t.mirror = true
		}
	}
	r.transport = t
	t.arrays = map[string]map[string]bool{}
	for _, gn := range r.opts.Graph.Nodes {
		for _, out := range gn.Out {
			t.arrays[out] = r.edgeArrays(out)
		}
	}
	for _, n := range r.nodes {
		if n.remote != "" || n.In == "" || !r.byValue(r.producerOf(n.In), n.Name) {
			continue
		}
		s, err := r.opts.Bus.NATS().Subscribe(r.dataSubject(n.In), r.onChunk)
		if err != nil {
			return fmt.Errorf("stage %s: subscribe to arrays by value: %w", n.id, err)
		}
		t.subs = append(t.subs, s)
	}
	return r.opts.Bus.NATS().Flush()
}

func (r *run) dataSubject(s string) string { return "flowrun." + r.id + ".data." + s }

// onChunk writes a chunk of a batch's arrays into this process's copy of
// the run's buffer (or clears the ranges it lists), then acknowledges it.
func (r *run) onChunk(m *nats.Msg) {
	buf := m.Header.Get(hdrBuffer)
	off, err := strconv.ParseInt(m.Header.Get(hdrOffset), 10, 64)
	switch {
	case err != nil:
	case m.Header.Get(hdrZeros) != "":
		for i := 0; i+16 <= len(m.Data) && err == nil; i += 16 {
			at, n := int64(binary.LittleEndian.Uint64(m.Data[i:])), int64(binary.LittleEndian.Uint64(m.Data[i+8:]))
			var dst []byte
			if dst, err = r.transport.bytesOf(&r.mapper, buf, at, n); err == nil {
				clear(dst)
			}
		}
	default:
		var dst []byte
		if dst, err = r.transport.bytesOf(&r.mapper, buf, off, int64(len(m.Data))); err == nil {
			copy(dst, m.Data)
		}
	}
	reply := nats.NewMsg(m.Reply)
	if err != nil {
		reply.Header.Set(hdrBuffer, "error: "+err.Error())
	}
	_ = m.RespondMsg(reply)
}

// bytesOf is where n bytes at off of the run's buffer name live in this
// process: its mirror of it, or the run's buffer itself.
func (t *transport) bytesOf(m *region.Mapper, name string, off, n int64) ([]byte, error) {
	if !t.mirror {
		return m.Bytes(region.Ref{Region: name, Offset: off, Length: n})
	}
	local, err := t.mirrorOf(name)
	if err != nil {
		return nil, err
	}
	if off < 0 || off+n > local.Size() {
		return nil, fmt.Errorf("chunk %d+%d beyond buffer %s", off, n, name)
	}
	return local.Bytes()[off : off+n], nil
}

// mirrorOf is this process's buffer for the run's buffer name, made at
// first use: one per buffer of the run's pool, reused by every batch in
// it.
func (t *transport) mirrorOf(name string) (*region.Region, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.local[name]; ok {
		return r, nil
	}
	r, err := region.Create("mirror", t.size)
	if err != nil {
		return nil, fmt.Errorf("mirror of batch buffer %s: %w", name, err)
	}
	t.local[name], t.origin[r.Name()] = r, name
	return r, nil
}

// toLocal rewrites a received header's buffer and refs to this
// process's mirror (nothing to do on the run's host).
func (t *transport) toLocal(h *batch.Header) error {
	if t == nil || !t.mirror {
		return nil
	}
	local, err := t.mirrorOf(h.Buffer)
	if err != nil {
		return err
	}
	retarget(h, local.Name())
	return nil
}

// toWire is the header as it travels: naming the run's buffer.
func (t *transport) toWire(h batch.Header) batch.Header {
	if t == nil || !t.mirror {
		return h
	}
	t.mu.Lock()
	origin, ok := t.origin[h.Buffer]
	t.mu.Unlock()
	if ok {
		retarget(&h, origin)
	}
	return h
}

// retarget points h's buffer and refs at buffer name (refs are copied:
// the batch keeps its own).
func retarget(h *batch.Header, name string) {
	refs := make(map[string]region.Ref, len(h.Refs))
	for k, ref := range h.Refs {
		if ref.Region == h.Buffer {
			ref.Region = name
		}
		refs[k] = ref
	}
	h.Buffer, h.Refs = name, refs
}

// sendArrays sends b's arrays to the consumer of graph subject s by
// value and returns once the consumer has written them all: the pages
// that hold data in chunks within the server's max_payload, up to
// sendWindow at once, and the all-zero pages (most of an array sized for
// the worst case) as ranges to clear, a few bytes each.
func (r *run) sendArrays(ctx context.Context, s string, b *batch.Batch) error {
	start := time.Now()
	wire := r.transport.toWire(b.Header)
	limit := int64(r.opts.Bus.NATS().MaxPayload() - chunkSlack)
	names := make([]string, 0, len(b.Refs))
	for k := range b.Refs {
		if a := r.transport.arrays[s]; a == nil || a[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var chunks []chunk
	var zeros []int64 // offset, length pairs
	for _, k := range names {
		data, err := r.mapper.Bytes(b.Refs[k])
		if err != nil {
			return fmt.Errorf("send array %s of batch %d: %w", k, b.Seq, err)
		}
		chunks, zeros = split(chunks, zeros, data, wire.Refs[k].Offset, limit)
	}
	for i := 0; i < len(zeros); {
		// 16 bytes a range: as many as a message holds.
		n := min(len(zeros)-i, int(limit/8)&^1)
		chunks = append(chunks, chunk{zeros: zeros[i : i+n]})
		i += n
	}
	var bytes int64
	for _, c := range chunks {
		bytes += int64(len(c.data)) + 8*int64(len(c.zeros))
	}
	if err := r.sendChunks(ctx, s, wire.Buffer, chunks); err != nil {
		return fmt.Errorf("send arrays of batch %d on %s: %w", b.Seq, s, err)
	}
	tr := r.transport.edge(s)
	tr.batches.Add(1)
	tr.bytes.Add(bytes)
	tr.messages.Add(int64(len(chunks)))
	tr.ns.Add(time.Since(start).Nanoseconds())
	return nil
}

// chunk is one message of a batch's arrays: data at off, or ranges of
// the buffer to clear.
type chunk struct {
	off   int64
	data  []byte
	zeros []int64
}

// zeroPage is the unit of split's zero test.
var zeroPage [4096]byte

// split appends data (at off in its buffer) to chunks, as runs of pages
// holding some data, each at most limit bytes, and to zeros, as ranges of
// all-zero pages.
func split(chunks []chunk, zeros []int64, data []byte, off, limit int64) ([]chunk, []int64) {
	for len(data) > 0 {
		n := min(len(data), len(zeroPage))
		isZero := bytes.Equal(data[:n], zeroPage[:n])
		switch {
		case isZero && len(zeros) > 0 && zeros[len(zeros)-2]+zeros[len(zeros)-1] == off:
			zeros[len(zeros)-1] += int64(n)
		case isZero:
			zeros = append(zeros, off, int64(n))
		case len(chunks) > 0 && chunks[len(chunks)-1].off+int64(len(chunks[len(chunks)-1].data)) == off &&
			int64(len(chunks[len(chunks)-1].data)+n) <= limit && cap(chunks[len(chunks)-1].data) >= len(chunks[len(chunks)-1].data)+n:
			// The page follows the last chunk's in the same array.
			last := &chunks[len(chunks)-1]
			last.data = last.data[:len(last.data)+n]
		default:
			chunks = append(chunks, chunk{off: off, data: data[:n:len(data)]})
		}
		data, off = data[n:], off+int64(n)
	}
	return chunks, zeros
}

// sendWindow is how many chunks of a batch are in flight at once.
const sendWindow = 8

// sendChunks sends chunks, up to sendWindow at once, and returns once
// each is acknowledged, or with the first error.
func (r *run) sendChunks(ctx context.Context, s, buffer string, chunks []chunk) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, sendWindow)
	var wg sync.WaitGroup
	for _, c := range chunks {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := r.sendChunk(ctx, s, buffer, c); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// sendChunk sends one chunk until its consumer has written it, waiting
// (chunkWait) for a consumer not yet subscribed.
func (r *run) sendChunk(ctx context.Context, s, buffer string, c chunk) error {
	m := nats.NewMsg(r.dataSubject(s))
	m.Header.Set(hdrBuffer, buffer)
	m.Header.Set(hdrOffset, strconv.FormatInt(c.off, 10))
	m.Data = c.data
	if c.zeros != nil {
		m.Header.Set(hdrZeros, "1")
		m.Data = make([]byte, 8*len(c.zeros))
		for i, v := range c.zeros {
			binary.LittleEndian.PutUint64(m.Data[8*i:], uint64(v))
		}
	}
	deadline := time.Now().Add(chunkWait)
	for {
		rctx, cancel := context.WithTimeout(ctx, chunkWait)
		reply, err := r.opts.Bus.NATS().RequestMsgWithContext(rctx, m)
		cancel()
		switch {
		case err == nil:
			if e := reply.Header.Get(hdrBuffer); e != "" {
				return errors.New(e)
			}
			return nil
		case errors.Is(err, nats.ErrNoResponders) && time.Now().Before(deadline):
			if err := sleepCtx(ctx, 2*time.Millisecond); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *transport) edge(s string) *edgeTraffic {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.traffic[s]
	if !ok {
		e = &edgeTraffic{}
		t.traffic[s] = e
	}
	return e
}

// close stops the data subscriptions and removes the mirrors.
func (t *transport) close() {
	if t == nil {
		return
	}
	for _, s := range t.subs {
		_ = s.Unsubscribe()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.local {
		_ = r.Close()
	}
}

// counts is what this process sent by value, per graph subject.
func (t *transport) counts() map[string]edgeCounts {
	out := map[string]edgeCounts{}
	if t == nil {
		return out
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for s, e := range t.traffic {
		out[s] = edgeCounts{Batches: e.batches.Load(), Bytes: e.bytes.Load(), Messages: e.messages.Load(), Ns: e.ns.Load()}
	}
	return out
}
