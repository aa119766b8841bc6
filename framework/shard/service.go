package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/flowrun/flowrun/framework/batch"
)

// Service is one table shard: the rows Owner gives it, of every table,
// in its own batch.Tables, created when the run's client configures it.
// Requests are handled one at a time, in arrival order (one NATS
// subscription), so a row returned and then fetched again is fetched
// with the returned value.
type Service struct {
	Index, Of int
	// Once makes Serve return when the run it served says it is done
	// (flowrun shard: a shard process leaves with its run).
	Once bool
	// Idle, when > 0, is how long a configured shard waits for a request
	// of its run before it takes the run for dead (killed, or cut off
	// from the server, without the done request) and drops its tables —
	// and, with Once, leaves with an error naming it. A run asks at
	// least once a batch.
	Idle time.Duration

	mu     sync.Mutex
	run    string    // the run that configured the tables
	last   time.Time // the latest request
	done   chan struct{}
	tables *batch.Tables
	rows   []int64   // [table]: the whole table's rows
	conf   []byte    // the configure request that made tables
	sorted [][]int64 // [table]: touched rows ascending, for a scan in progress
	maxOut int       // bytes a reply may take
}

// NewService is shard index of of, with no tables until configured.
func NewService(index, of int) (*Service, error) {
	if of < 1 || index < 0 || index >= of {
		return nil, fmt.Errorf("shard: index %d of %d: need 0 ≤ index < of", index, of)
	}
	return &Service{Index: index, Of: of, done: make(chan struct{}, 1)}, nil
}

// Serve answers run's requests for this shard on nc until ctx ends (or,
// with Once, its run is done), then closes the tables. An empty run
// serves the first run that configures the shard, and only that one.
func (s *Service) Serve(ctx context.Context, nc *nats.Conn, run string) error {
	s.maxOut = int(nc.MaxPayload()) - overhead
	subj := Subject(run, s.Index)
	if run == "" {
		subj = Subject("*", s.Index)
	}
	sub, err := nc.Subscribe(subj, func(m *nats.Msg) {
		_ = m.Respond(s.handleFrom(runOf(m.Subject), m.Data))
	})
	if err != nil {
		return fmt.Errorf("shard %d: subscribe: %w", s.Index, err)
	}
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("shard %d: subscribe: %w", s.Index, err)
	}
	err = s.wait(ctx)
	_ = sub.Unsubscribe()
	s.Close()
	return err
}

// wait returns when ctx ends, the run is done (Once), or, with Once, the
// run has been silent for Idle.
func (s *Service) wait(ctx context.Context) error {
	var tick <-chan time.Time
	if s.Idle > 0 {
		t := time.NewTicker(max(s.Idle/4, 10*time.Millisecond))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return nil
		case now := <-tick:
			if run, gone := s.dropIfSilent(now); gone && s.Once {
				return fmt.Errorf("shard %d: run %s sent nothing for %v: taken for dead, its rows dropped", s.Index, run, s.Idle)
			}
		}
	}
}

// dropIfSilent drops the tables of a run silent for Idle at now, and says
// which run it was.
func (s *Service) dropIfSilent(now time.Time) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tables == nil || now.Sub(s.last) <= s.Idle {
		return "", false
	}
	run := s.run
	s.closeTables()
	s.run = ""
	return run, true
}

// Close removes the shard's tables.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeTables()
}

// closeTables removes the tables, under s.mu.
func (s *Service) closeTables() {
	if s.tables != nil {
		s.tables.Close()
		s.tables = nil
	}
}

// Tables is the shard's tables (nil before it is configured).
func (s *Service) Tables() *batch.Tables {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tables
}

// runOf is the run in a shard subject, flowrun.<run>.shard.<i>.
func runOf(subject string) string {
	s := strings.TrimPrefix(subject, "flowrun.")
	if i := strings.LastIndex(s, ".shard."); i >= 0 {
		return s[:i]
	}
	return s
}

// Handle answers one request, from the run the shard serves.
func (s *Service) Handle(req []byte) []byte { return s.handleFrom("", req) }

// handleFrom answers one request of run: a shard serves one run.
func (s *Service) handleFrom(run string, req []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = time.Now()
	if len(req) == 0 {
		return replyErr(errors.New("empty request"))
	}
	if s.run != "" && run != "" && run != s.run {
		return replyErr(fmt.Errorf("shard %d serves run %s, not %s", s.Index, s.run, run))
	}
	d := &dec{b: req[1:]}
	out := &enc{b: []byte{statusOK}}
	var err error
	switch op := req[0]; {
	case op == opPing:
		out.u32(uint32(s.Index))
		out.u32(uint32(s.Of))
	case op == opConfigure:
		if err = s.configure(req, d); err == nil {
			s.run = run
		}
	case op == opDone:
		s.closeTables()
		s.run = ""
		if s.Once {
			select {
			case s.done <- struct{}{}:
			default:
			}
		}
	case s.tables == nil:
		err = fmt.Errorf("shard %d: not configured", s.Index)
	case op == opFetch:
		err = s.fetch(d, out)
	case op == opReturn:
		err = s.put(d)
	case op == opCount:
		for t := range s.tables.Len() {
			out.u64(uint64(s.tables.TouchedRows(t)))
		}
	case op == opScan:
		err = s.scan(d, out)
	default:
		err = fmt.Errorf("unknown op %d", op)
	}
	if err == nil {
		err = d.err
	}
	if err != nil {
		return replyErr(fmt.Errorf("shard %d: %w", s.Index, err))
	}
	return out.b
}

// configure creates the tables; the same request again is a no-op.
func (s *Service) configure(req []byte, d *dec) error {
	if s.tables != nil {
		if slices.Equal(s.conf, req) {
			return nil
		}
		return errors.New("configured differently already")
	}
	seed, dim, stride, n := d.u64(), int(d.u32()), int(d.u32()), int(d.u32())
	rows := d.ids(n)
	if d.err != nil {
		return d.err
	}
	t, err := batch.NewPartTables(seed, rows, dim, stride, batch.Part{Index: int64(s.Index), Of: int64(s.Of)})
	if err != nil {
		return err
	}
	s.tables, s.rows, s.conf, s.sorted = t, rows, slices.Clone(req), make([][]int64, n)
	return nil
}

// readIDs reads per-table ID lists, checking they are this shard's rows,
// as local rows.
func (s *Service) readIDs(d *dec) ([][]int64, error) {
	n := int(d.u32())
	if n > s.tables.Len() {
		return nil, fmt.Errorf("IDs for %d tables, there are %d", n, s.tables.Len())
	}
	ids := make([][]int64, n)
	for t := range ids {
		ids[t] = d.ids(int(d.u32()))
		for i, id := range ids[t] {
			l, err := s.local(t, id)
			if err != nil {
				return nil, err
			}
			ids[t][i] = l
		}
	}
	return ids, d.err
}

// local is row id of table t as this shard stores it.
func (s *Service) local(t int, id int64) (int64, error) {
	if id < 0 || id >= s.rows[t] || Owner(t, id, s.Of) != s.Index {
		return 0, fmt.Errorf("table %d row %d is not this shard's", t, id)
	}
	return id / int64(s.Of), nil
}

// fetch answers the rows asked for, initialising those never touched.
func (s *Service) fetch(d *dec, out *enc) error {
	ids, err := s.readIDs(d)
	if err != nil {
		return err
	}
	if err := s.tables.TouchTables(ids); err != nil {
		return err
	}
	for t, tids := range ids {
		for _, id := range tids {
			out.floats(s.tables.Row(t, id))
		}
	}
	return nil
}

// put stores returned rows.
func (s *Service) put(d *dec) error {
	n := int(d.u32())
	if n > s.tables.Len() {
		return fmt.Errorf("rows for %d tables, there are %d", n, s.tables.Len())
	}
	row := make([]float32, s.tables.Stride)
	for t := range n {
		ids := d.ids(int(d.u32()))
		for _, id := range ids {
			l, err := s.local(t, id)
			if err != nil {
				return err
			}
			if d.floats(row); d.err != nil {
				return d.err
			}
			copy(s.tables.Row(t, l), row)
		}
	}
	return nil
}

// scan answers up to limit touched rows of a table after row after
// (−1: from the first), ascending, with their values: the digest's
// order. A scan from the first row takes the touched rows' list anew.
func (s *Service) scan(d *dec, out *enc) error {
	t, after, limit := int(d.u32()), int64(d.u64()), int(d.u32())
	if d.err != nil || t < 0 || t >= s.tables.Len() {
		return fmt.Errorf("scan of table %d", t)
	}
	if after < 0 || s.sorted[t] == nil {
		s.sorted[t] = s.tables.TouchedIDs(t)
	}
	// Local rows ascend as their rows do (row = local·Of + Index).
	ids, of, idx := s.sorted[t], int64(s.Of), int64(s.Index)
	i, _ := slices.BinarySearchFunc(ids, after, func(l, after int64) int {
		if l*of+idx <= after {
			return -1
		}
		return 1
	})
	limit = min(limit, max(1, s.maxOut/(8+4*s.tables.Stride)), len(ids)-i)
	out.u32(uint32(limit))
	for _, l := range ids[i : i+limit] {
		out.u64(uint64(l*of + idx))
	}
	for _, l := range ids[i : i+limit] {
		out.floats(s.tables.Row(t, l))
	}
	return nil
}
