package shard

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultTimeout is how long a client waits for a shard's answer: a shard
// that died answers nothing (or NATS says no one listens), and the run
// fails naming it within this.
const DefaultTimeout = time.Second

// Client is the running process's side of sharded tables: a batch.Remote
// over Of shards of run. Fetch and Return send, per call, one request per
// shard that has rows in it (more when the rows exceed max_payload), the
// shards in parallel.
type Client struct {
	nc      *nats.Conn
	run     string
	of      int
	stride  int
	timeout time.Duration
	maxIn   int // bytes a message may take
	traffic []Traffic
}

// Traffic is what crossed to and from one shard.
type Traffic struct {
	Shard    int
	Requests atomic.Int64
	Sent     atomic.Int64 // bytes, requests
	Received atomic.Int64 // bytes, replies
}

// NewClient is a client of the of shards of run on nc; timeout 0 is
// DefaultTimeout.
func NewClient(nc *nats.Conn, run string, of int, timeout time.Duration) (*Client, error) {
	if of < 1 {
		return nil, fmt.Errorf("shards: %d, need ≥ 1", of)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c := &Client{nc: nc, run: run, of: of, timeout: timeout, maxIn: int(nc.MaxPayload()) - overhead, traffic: make([]Traffic, of)}
	for i := range c.traffic {
		c.traffic[i].Shard = i
	}
	return c, nil
}

// Shards is the number of shards.
func (c *Client) Shards() int { return c.of }

// Traffic is what crossed to and from shard i so far.
func (c *Client) Traffic(i int) *Traffic { return &c.traffic[i] }

// request sends req to shard i and checks the reply's status; an error
// names the shard.
//
// While the reply is awaited, the shard is asked every quarter of the
// timeout whether it is still there: NATS answers "no responders" at
// once for a shard whose process is gone (its subscription went with its
// connection), and the call fails naming it, so a shard killed with a
// request in flight fails the call within about a quarter of the
// timeout. A shard that is there but busy (a loaded machine) is waited
// for, up to patience timeouts; the request is sent once.
func (c *Client) request(i int, req []byte) (*dec, error) {
	subj := Subject(c.run, i)
	t := &c.traffic[i]
	fail := func(err error) error { return fmt.Errorf("table shard %d of %d (%s): %w", i, c.of, subj, err) }
	t.Requests.Add(1)
	t.Sent.Add(int64(len(req)))
	type reply struct {
		m   *nats.Msg
		err error
	}
	// Buffered: a request abandoned for a gone shard ends on its own
	// (its timeout) without anyone to hand its reply to.
	ch := make(chan reply, 1)
	go func() {
		m, err := c.nc.Request(subj, req, patience*c.timeout)
		ch <- reply{m, err}
	}()
	tick := time.NewTicker(c.timeout / 4)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if c.gone(subj) {
				return nil, fail(errors.New("no answer, and no one listens any more: the shard is gone"))
			}
			continue
		case r := <-ch:
			switch {
			case errors.Is(r.err, nats.ErrNoResponders):
				return nil, fail(errors.New("not running (no one listens)"))
			case errors.Is(r.err, nats.ErrTimeout):
				return nil, fail(fmt.Errorf("no answer within %v", patience*c.timeout))
			case r.err != nil:
				return nil, fail(r.err)
			}
			t.Received.Add(int64(len(r.m.Data)))
			d, err := status(r.m.Data)
			if err != nil {
				return nil, fail(err)
			}
			return d, nil
		}
	}
}

// patience is how many timeouts a shard that is still there may take to
// answer one request.
const patience = 30

// gone reports whether no one listens on subj any more.
func (c *Client) gone(subj string) bool {
	_, err := c.nc.Request(subj, []byte{opPing}, c.timeout/4)
	return errors.Is(err, nats.ErrNoResponders)
}

// Wait pings every shard until all answer or ctx ends: shards started
// beside the run may come up after it.
func (c *Client) Wait(ctx context.Context) error {
	for i := range c.of {
		for {
			d, err := c.request(i, []byte{opPing})
			if err == nil {
				if idx, of := int(d.u32()), int(d.u32()); idx != i || of != c.of {
					return fmt.Errorf("table shard on %s is shard %d of %d, the run has %d", Subject(c.run, i), idx, of, c.of)
				}
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for table shards: %w", err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// Done tells every shard the run is over: they drop its tables (and a
// `flowrun shard` process leaves). Shards that are gone are not waited for.
func (c *Client) Done() error {
	return c.each(func(i int) error {
		_, err := c.request(i, []byte{opDone})
		return err
	})
}

// Configure has every shard create its tables: rows[t] rows of table t,
// dim values and stride float32s a row, initialised from seed.
func (c *Client) Configure(seed uint64, rows []int64, dim, stride int) error {
	e := &enc{b: []byte{opConfigure}}
	e.u64(seed)
	e.u32(uint32(dim))
	e.u32(uint32(stride))
	e.u32(uint32(len(rows)))
	e.ids(rows)
	c.stride = stride
	return c.each(func(i int) error {
		_, err := c.request(i, e.b)
		return err
	})
}

// each runs f for every shard at once and joins their errors.
func (c *Client) each(f func(i int) error) error {
	errs := make([]error, c.of)
	var wg sync.WaitGroup
	for i := range c.of {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// part is one shard's share of a call: per table, the positions (in the
// caller's ids[t]) of its rows.
type part [][]int

// split is each shard's positions of ids.
func (c *Client) split(ids [][]int64) []part {
	parts := make([]part, c.of)
	for i := range parts {
		parts[i] = make(part, len(ids))
	}
	for t, tids := range ids {
		for k, id := range tids {
			o := Owner(t, id, c.of)
			parts[o][t] = append(parts[o][t], k)
		}
	}
	return parts
}

// chunks cuts a part into pieces of at most n rows, tables in order.
func chunks(p part, n int) []part {
	var out []part
	cur, size := make(part, len(p)), 0
	for t, ks := range p {
		for len(ks) > 0 {
			k := min(n-size, len(ks))
			cur[t] = append(cur[t], ks[:k]...)
			ks, size = ks[k:], size+k
			if size == n {
				out, cur, size = append(out, cur), make(part, len(p)), 0
			}
		}
	}
	if size > 0 {
		out = append(out, cur)
	}
	return out
}

// rowsPerMessage is the rows one message may carry (each with its ID).
func (c *Client) rowsPerMessage() int { return max(1, c.maxIn/(8+4*c.stride)) }

// Fetch fills rows[t] with the current values of rows ids[t].
func (c *Client) Fetch(ids [][]int64, rows [][]float32) error {
	parts := c.split(ids)
	s := c.stride
	return c.each(func(i int) error {
		for _, ch := range chunks(parts[i], c.rowsPerMessage()) {
			e := &enc{b: []byte{opFetch}}
			e.u32(uint32(len(ch)))
			for t, ks := range ch {
				e.u32(uint32(len(ks)))
				for _, k := range ks {
					e.u64(uint64(ids[t][k]))
				}
			}
			d, err := c.request(i, e.b)
			if err != nil {
				return err
			}
			for t, ks := range ch {
				for _, k := range ks {
					d.floats(rows[t][k*s : (k+1)*s])
				}
			}
			if d.err != nil {
				return fmt.Errorf("table shard %d: fetch reply: %w", i, d.err)
			}
		}
		return nil
	})
}

// Return hands rows ids[t] with values rows[t] back to their shards.
func (c *Client) Return(ids [][]int64, rows [][]float32) error {
	parts := c.split(ids)
	s := c.stride
	return c.each(func(i int) error {
		for _, ch := range chunks(parts[i], c.rowsPerMessage()) {
			e := &enc{b: []byte{opReturn}}
			e.u32(uint32(len(ch)))
			for t, ks := range ch {
				e.u32(uint32(len(ks)))
				for _, k := range ks {
					e.u64(uint64(ids[t][k]))
				}
				for _, k := range ks {
					e.floats(rows[t][k*s : (k+1)*s])
				}
			}
			if _, err := c.request(i, e.b); err != nil {
				return err
			}
		}
		return nil
	})
}

// Hash writes the shards' rows into h exactly as batch.Tables.Hash writes
// one process's: table after table, the touched rows' count, then every
// touched row ascending as its ID and its Stride float32s. Each shard
// scans its rows ascending; the client merges the scans by ID.
func (c *Client) Hash(h hash.Hash) error {
	counts := make([][]uint64, c.of)
	if err := c.each(func(i int) error {
		d, err := c.request(i, []byte{opCount})
		if err != nil {
			return err
		}
		for len(d.b) >= 8 {
			counts[i] = append(counts[i], d.u64())
		}
		return nil
	}); err != nil {
		return err
	}
	for t := range counts[0] {
		var n uint64
		for i := range c.of {
			if len(counts[i]) != len(counts[0]) {
				return fmt.Errorf("table shard %d has %d tables, shard 0 has %d", i, len(counts[i]), len(counts[0]))
			}
			n += counts[i][t]
		}
		h.Write(binary.LittleEndian.AppendUint64(nil, n))
		if err := c.mergeTable(h, t); err != nil {
			return err
		}
	}
	return nil
}

// scanner is one shard's scan of a table, a page at a time.
type scanner struct {
	ids  []int64
	rows []byte
	last int64
	done bool
}

// next fills the scanner's page after its last row.
func (c *Client) next(i, t int, sc *scanner) error {
	e := &enc{b: []byte{opScan}}
	e.u32(uint32(t))
	e.u64(uint64(sc.last))
	e.u32(uint32(c.rowsPerMessage()))
	d, err := c.request(i, e.b)
	if err != nil {
		return err
	}
	n := int(d.u32())
	sc.ids = d.ids(n)
	sc.rows = d.take(4 * c.stride * n)
	if d.err != nil {
		return fmt.Errorf("table shard %d: scan reply: %w", i, d.err)
	}
	sc.done = n == 0
	if n > 0 {
		sc.last = sc.ids[n-1]
	}
	return nil
}

// mergeTable writes table t's rows, merged by ID over the shards' scans.
func (c *Client) mergeTable(h hash.Hash, t int) error {
	scs := make([]*scanner, c.of)
	for i := range scs {
		scs[i] = &scanner{last: -1}
		if err := c.next(i, t, scs[i]); err != nil {
			return err
		}
	}
	rb := 4 * c.stride
	buf := make([]byte, 0, 1<<16)
	defer func() { h.Write(buf) }()
	for {
		best := -1
		for i, sc := range scs {
			if !sc.done && (best < 0 || sc.ids[0] < scs[best].ids[0]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		sc := scs[best]
		id := sc.ids[0]
		if len(buf)+8+rb > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
		buf = binary.LittleEndian.AppendUint64(buf, uint64(id))
		buf = append(buf, sc.rows[:rb]...)
		sc.ids, sc.rows = sc.ids[1:], sc.rows[rb:]
		if len(sc.ids) == 0 {
			if err := c.next(best, t, sc); err != nil {
				return err
			}
		}
	}
	return nil
}
