package batch

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"slices"
	"sync"
)

// Staging tables: host tables whose rows live elsewhere (framework/shard's
// table shards, each a process owning its rows' values and optimizer
// state) and are staged here only while a batch in flight needs them.
//
// A staging table is an FP32 compact table (compact.go) with a free list:
// TouchBatch fetches, per batch, the rows of its IDs that are not staged
// (one Remote.Fetch for all tables: the remote batches it per shard) into
// free positions, and leases the batch's rows to the batch's buffer. When
// the buffer is filled again, its previous batch has left the graph
// (every sink has seen it), so that lease ends: rows no lease holds any
// more are sent back (one Remote.Return) and their positions freed for
// the next fetched rows. So the process holds the rows of the batches in
// flight, not the table, and since every read and write of a staged row
// happens on the local copy, as it would on an unsharded table, the
// values are exactly the unsharded run's.
//
// Rows written that no lease holds (a scratchpad's victims written back,
// Storage's flush at the end of a run) are staged for the write and sent
// back with the next release. Reading a row that is not staged is a
// programming error and panics: it would read a value that is not the
// row's.

// Remote is where a staging table's rows live. ids[t] and rows[t] are table
// t's; rows hold len(ids[t]) rows of Stride float32 each, in ids' order.
type Remote interface {
	// Fetch fills rows with the current rows ids (distinct per table).
	Fetch(ids [][]int64, rows [][]float32) error
	// Return hands rows back: they are the rows' values from now on.
	Return(ids [][]int64, rows [][]float32) error
	// Hash writes the tables as Tables.Hash would write them, had every
	// row stayed in one process.
	Hash(h hash.Hash) error
}

// staging is a staging table's state (under mu).
type staging struct {
	mu     sync.Mutex
	remote Remote
	leases map[string][][]int64 // buffer → its batch's rows, per table, distinct
	refs   [][]int32            // [table][position]: leases holding the row there
	free   [][]int64            // [table]: free positions
	loose  [][]int64            // [table]: rows staged by a write outside a lease
	nLoose int                  // rows in loose
	// err is a failed send-back of rows written outside a lease
	// (WriteRow has no error to return): the next TouchBatch or digest
	// returns it.
	err error
	// Rows moved, for the report.
	fetched, returned int64
}

// StagingStats is what a staging table moved.
type StagingStats struct {
	Fetched, Returned int64 // rows
	Staged            int64 // rows staged now
}

// Stage makes t a staging table over r. The tables must be FP32 and
// compact, and untouched.
func (t *Tables) Stage(r Remote) error {
	for i, vt := range t.tables {
		if vt.low != nil || vt.index == nil {
			return fmt.Errorf("host table %d: sharded tables must be FP32 and under 2³¹−1 rows", i)
		}
		if vt.touched.Load() != 0 {
			return fmt.Errorf("host table %d: staged after rows were touched", i)
		}
	}
	n := len(t.tables)
	t.stage = &staging{remote: r, leases: map[string][][]int64{},
		refs: make([][]int32, n), free: make([][]int64, n), loose: make([][]int64, n)}
	return nil
}

// Staged reports whether t is a staging table.
func (t *Tables) Staged() bool { return t.stage != nil }

// StagingStats is what the staging table moved so far.
func (t *Tables) StagingStats() StagingStats {
	s := t.stage
	if s == nil {
		return StagingStats{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var st int64
	for i := range t.tables {
		st += t.TouchedRows(i)
	}
	return StagingStats{Fetched: s.fetched, Returned: s.returned, Staged: st}
}

// Moved is what a batch's TouchBatch moved to and from the remote: rows
// fetched and sent back (each with its ID on the wire).
type Moved struct {
	Fetched, Returned int64 // rows
	RowBytes          int64 // bytes of one row on the wire: its ID and Stride float32s
}

// In is the bytes that came in (fetched rows), Out those that went out
// (the fetched rows' IDs, the rows sent back).
func (m Moved) In() int64  { return m.Fetched * (m.RowBytes - 8) }
func (m Moved) Out() int64 { return m.Fetched*8 + m.Returned*m.RowBytes }

// TouchBatch touches the IDs of the batch in buffer buf, ids[t] table t's.
// On plain tables it is TouchTables and moves nothing. On a staging table
// it first leases the rows already staged, then ends the lease of the
// batch that used buf before (it has left the graph), returns the rows no
// lease holds, and fetches the batch's rows that are not staged.
func (t *Tables) TouchBatch(buf string, ids [][]int64) (Moved, error) {
	s := t.stage
	if s == nil {
		return Moved{}, t.TouchTables(ids)
	}
	if len(ids) > t.Len() {
		return Moved{}, fmt.Errorf("host tables: IDs for %d tables, there are %d", len(ids), t.Len())
	}
	lease := make([][]int64, t.Len())
	for tab, tids := range ids {
		d := slices.Clone(tids)
		slices.Sort(d)
		d = slices.Compact(d)
		if len(d) > 0 && (d[0] < 0 || d[len(d)-1] >= t.rows[tab]) {
			return Moved{}, fmt.Errorf("host table %d: row outside [0, %d) in batch", tab, t.rows[tab])
		}
		lease[tab] = d
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return Moved{}, s.err
	}
	missing := make([][]int64, t.Len())
	for tab, d := range lease {
		vt := t.tables[tab]
		for _, id := range d {
			if t.Touched(tab, id) {
				s.refs[tab][vt.pos(id)]++
			} else {
				missing[tab] = append(missing[tab], id)
			}
		}
	}
	old := s.leases[buf]
	delete(s.leases, buf)
	f0, r0 := s.fetched, s.returned
	if err := t.release(old); err != nil {
		return Moved{}, err
	}
	if err := t.fetch(missing); err != nil {
		return Moved{}, err
	}
	s.leases[buf] = lease
	return Moved{Fetched: s.fetched - f0, Returned: s.returned - r0, RowBytes: 8 + 4*int64(t.Stride)}, nil
}

// release ends a lease (nil: none) and sends back every row no lease
// holds, with the loose ones; under s.mu.
func (t *Tables) release(old [][]int64) error {
	s := t.stage
	back := make([][]int64, t.Len())
	for tab := range t.tables {
		vt := t.tables[tab]
		if old != nil {
			for _, id := range old[tab] {
				p := vt.pos(id)
				if s.refs[tab][p]--; s.refs[tab][p] == 0 {
					back[tab] = append(back[tab], id)
				}
			}
		}
		// A loose row whose lease just ended is in back already: the
		// rows in back are distinct, so sort and compact.
		n := len(back[tab])
		for _, id := range s.loose[tab] {
			if t.Touched(tab, id) && s.refs[tab][vt.pos(id)] == 0 {
				back[tab] = append(back[tab], id)
			}
		}
		if len(back[tab]) > n {
			slices.Sort(back[tab])
			back[tab] = slices.Compact(back[tab])
		}
		s.loose[tab] = s.loose[tab][:0]
	}
	s.nLoose = 0
	return t.sendBack(back)
}

// sendBack returns rows (staged, leased by no one) to the remote and frees
// their positions; under s.mu.
func (t *Tables) sendBack(back [][]int64) error {
	s := t.stage
	rows := make([][]float32, t.Len())
	var n int64
	for tab, ids := range back {
		rows[tab] = make([]float32, 0, len(ids)*t.Stride)
		for _, id := range ids {
			rows[tab] = append(rows[tab], t.stagedRow(tab, id)...)
		}
		n += int64(len(ids))
	}
	if n == 0 {
		return nil
	}
	if err := s.remote.Return(back, rows); err != nil {
		return fmt.Errorf("host tables: send back %d rows: %w", n, err)
	}
	s.returned += n
	for tab, ids := range back {
		vt := t.tables[tab]
		for _, id := range ids {
			s.free[tab] = append(s.free[tab], vt.pos(id))
			vt.bits[id>>6].And(^(uint64(1) << (id & 63)))
			vt.index[id] = 0
		}
		vt.touched.Add(-int64(len(ids)))
	}
	return nil
}

// fetch stages rows (distinct, not staged) from the remote, each leased
// once; under s.mu.
func (t *Tables) fetch(missing [][]int64) error {
	s := t.stage
	rows := make([][]float32, t.Len())
	var n int64
	for tab, ids := range missing {
		rows[tab] = make([]float32, len(ids)*t.Stride)
		n += int64(len(ids))
	}
	if n == 0 {
		return nil
	}
	if err := s.remote.Fetch(missing, rows); err != nil {
		return fmt.Errorf("host tables: fetch %d rows: %w", n, err)
	}
	s.fetched += n
	for tab, ids := range missing {
		for i, id := range ids {
			if err := t.place(tab, id, rows[tab][i*t.Stride:(i+1)*t.Stride], 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// place stages row id of table (not staged) with values src and refs
// leases: in a free position, or the next one (its pages allocated);
// under s.mu.
func (t *Tables) place(tab int, id int64, src []float32, refs int32) error {
	s, vt := t.stage, t.tables[tab]
	var p int64
	if f := s.free[tab]; len(f) > 0 {
		p, s.free[tab] = f[len(f)-1], f[:len(f)-1]
	} else {
		rb := 4 * int64(t.Stride)
		if err := vt.pages.populateSpan(&vt.noPopulate, vt.next*rb, rb); err != nil {
			return fmt.Errorf("host table %d row %d: %w", tab, id, err)
		}
		p = vt.next
		vt.next++
		s.refs[tab] = append(s.refs[tab], 0)
	}
	one := [1]int64{id}
	if err := vt.indexPages.populateRows(&vt.noPopulate, one[:], 4); err != nil {
		return fmt.Errorf("host table %d row %d: %w", tab, id, err)
	}
	copy(vt.data[p*int64(t.Stride):(p+1)*int64(t.Stride)], src)
	vt.index[id] = int32(p + 1)
	s.refs[tab][p] = refs
	vt.bits[id>>6].Or(1 << (id & 63))
	vt.touched.Add(1)
	return nil
}

// checkStaged is Touch on a staging table: the load stage staged every
// row of a batch (TouchBatch), so a later stage touching rows of its own
// batch (score's candidates) finds them staged, and nothing is to do; a
// row no batch in flight staged is an error.
func (t *Tables) checkStaged(tab int, ids []int64) error {
	s := t.stage
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if uint64(id) >= uint64(t.rows[tab]) {
			return fmt.Errorf("host table %d: row %d outside [0, %d)", tab, id, t.rows[tab])
		}
		if !t.Touched(tab, id) { // a staged row's bit; released rows clear it
			return fmt.Errorf("host table %d row %d: %w", tab, id, errNotStaged)
		}
	}
	return nil
}

// stagedRow is the Stride floats of a staged row.
func (t *Tables) stagedRow(tab int, id int64) []float32 {
	vt, s := t.tables[tab], int64(t.Stride)
	p := vt.pos(id)
	return vt.data[p*s : (p+1)*s]
}

// maxLoose is how many rows written outside a lease a staging table
// holds before it sends them back: Storage's flush at the end of a run
// writes every cached row (4 M rows at 5 % of 8 × 10 M), which must not
// all be staged at once.
const maxLoose = 1 << 15

// writeStaged writes src (Stride floats) as row id of a staging table:
// into its staged copy, or, when no batch in flight leases it (a victim
// written back, Storage's flush), into a copy staged for the write and
// sent back with the next release, or once maxLoose rows are waiting.
func (t *Tables) writeStaged(tab int, id int64, src []float32) {
	s := t.stage
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.Touched(tab, id) {
		copy(t.stagedRow(tab, id), src)
		return
	}
	if err := t.place(tab, id, src, 0); err != nil {
		panic(err)
	}
	s.loose[tab] = append(s.loose[tab], id)
	if s.nLoose++; s.nLoose >= maxLoose {
		if err := t.release(nil); err != nil && s.err == nil {
			s.err = err
		}
	}
}

// ReturnAll ends every lease and sends every staged row back: the end of
// a run, before its digest, when no batch is in flight.
func (t *Tables) ReturnAll() error {
	s := t.stage
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	for buf, l := range s.leases {
		delete(s.leases, buf)
		if err := t.release(l); err != nil {
			return err
		}
	}
	return t.release(nil)
}

// DigestErr is Digest, for tables that may be staging tables: their rows
// are sent back first, and the remote hashes them as one table would.
func (t *Tables) DigestErr(dense []byte) (string, error) {
	if t.stage == nil {
		return t.Digest(dense), nil
	}
	if err := t.ReturnAll(); err != nil {
		return "", err
	}
	h := sha256.New()
	if err := t.stage.remote.Hash(h); err != nil {
		return "", fmt.Errorf("host tables digest: %w", err)
	}
	h.Write(dense)
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// errNotStaged is a read of a staging table's row that no batch staged.
var errNotStaged = errors.New("read of a sharded table's row that is not staged (only the rows of batches in flight are)")

// Seed is the seed rows are initialised from.
func (t *Tables) Seed() uint64 { return t.seed }

// Part is part Index of Of of row-partitioned tables: the rows r with
// r mod Of = Index, stored as local rows r / Of (framework/shard's
// table shards). The zero Part is the whole table.
type Part struct{ Index, Of int64 }

// global is local row id's row in the whole table.
func (p Part) global(id int64) int64 {
	if p.Of <= 1 {
		return id
	}
	return id*p.Of + p.Index
}

// NewPartTables creates part p of the FP32 tables NewTablesRows(seed,
// rows, dim, stride) would make: table t has the local rows 0 to
// ⌈(rows[t] − p.Index) / p.Of⌉ − 1 (at least one), and local row l holds,
// from its first touch, the initial value of row l·Of + Index of the
// whole table. So a part's index and regions are 1/Of of the table's,
// and its rows are exactly the whole table's.
func NewPartTables(seed uint64, rows []int64, dim, stride int, p Part) (*Tables, error) {
	if p.Of < 1 || p.Index < 0 || p.Index >= p.Of {
		return nil, fmt.Errorf("host tables: part %d of %d", p.Index, p.Of)
	}
	local := make([]int64, len(rows))
	for i, r := range rows {
		local[i] = max(1, (r-p.Index+p.Of-1)/p.Of)
	}
	t, err := NewTablesRows(seed, local, dim, stride)
	if err != nil {
		return nil, err
	}
	t.part = p
	return t, nil
}
