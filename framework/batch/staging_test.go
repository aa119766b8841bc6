package batch

import (
	"errors"
	"hash"
	"slices"
	"testing"
)

// A part's local row l is the whole table's row l·Of + Index, from its
// first touch.
func TestPartTablesHoldTheWholeTablesRows(t *testing.T) {
	whole, err := NewTablesRows(3, []int64{100, 7}, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	for idx := range int64(3) {
		p, err := NewPartTables(3, []int64{100, 7}, 4, 4, Part{Index: idx, Of: 3})
		if err != nil {
			t.Fatal(err)
		}
		if want := (100 - idx + 2) / 3; p.RowsOf(0) != want {
			t.Errorf("part %d: %d rows of table 0, want %d", idx, p.RowsOf(0), want)
		}
		for tab, n := range []int64{100, 7} {
			for r := idx; r < n; r += 3 {
				if got, want := p.Row(tab, r/3), whole.Row(tab, r); !slices.Equal(got, want) {
					t.Fatalf("part %d table %d row %d: %v, whole table %v", idx, tab, r, got, want)
				}
			}
		}
		p.Close()
	}
}

// memRemote is a Remote over one process's tables.
type memRemote struct{ t *Tables }

func (m memRemote) Fetch(ids [][]int64, rows [][]float32) error {
	for tab, tids := range ids {
		for i, id := range tids {
			copy(rows[tab][i*m.t.Stride:], m.t.Row(tab, id))
		}
	}
	return nil
}

func (m memRemote) Return(ids [][]int64, rows [][]float32) error {
	for tab, tids := range ids {
		for i, id := range tids {
			copy(m.t.Row(tab, id), rows[tab][i*m.t.Stride:(i+1)*m.t.Stride])
		}
	}
	return nil
}

func (m memRemote) Hash(h hash.Hash) error { m.t.Hash(h); return nil }

// Positions freed by rows sent back are reused: the staged table's
// written pages stay at the rows of the batches in flight, however many
// rows the run touches.
func TestStagingReusesPositions(t *testing.T) {
	remote, err := NewTablesRows(5, []int64{100000}, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	st, err := NewTablesRows(5, []int64{100000}, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Stage(memRemote{remote}); err != nil {
		t.Fatal(err)
	}
	for b := range int64(200) {
		ids := make([]int64, 50)
		for i := range ids {
			ids[i] = b*50 + int64(i) // every batch new rows
		}
		m, err := st.TouchBatch(string(rune('a'+b%2)), [][]int64{ids})
		if err != nil {
			t.Fatal(err)
		}
		if m.Fetched != 50 {
			t.Fatalf("batch %d fetched %d rows, want 50", b, m.Fetched)
		}
	}
	// A stage touching its own batch's rows (score's candidates) finds
	// them staged; a row no batch in flight holds is an error.
	if err := st.TouchTables([][]int64{{9950, 9999}}); err != nil {
		t.Errorf("touching the last batch's staged rows: %v", err)
	}
	if err := st.TouchTables([][]int64{{1}}); !errors.Is(err, errNotStaged) {
		t.Errorf("touching a row no batch holds: %v, want errNotStaged", err)
	}
	if next := st.tables[0].next; next > 100 {
		t.Errorf("10000 rows through two buffers of 50 took %d positions, want ≤ 100", next)
	}
	if got, want := mustDigest(t, st), remote.Digest(nil); got != want {
		t.Errorf("digest %s, remote %s", got, want)
	}
}

func mustDigest(t *testing.T, st *Tables) string {
	t.Helper()
	d, err := st.DigestErr(nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Rows written outside any lease (Storage's flush of every cached row)
// go back once maxLoose are waiting: they are never all staged at once.
func TestStagingSendsLooseWritesInBounds(t *testing.T) {
	remote, err := NewTablesRows(5, []int64{200000}, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	want, err := NewTablesRows(5, []int64{200000}, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	st, err := NewTablesRows(5, []int64{200000}, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Stage(memRemote{remote}); err != nil {
		t.Fatal(err)
	}
	row := []float32{1, 2, 3, 4}
	for id := range int64(3*maxLoose + 7) {
		row[0] = float32(id)
		st.WriteRow(0, id*2, row, 0)
		want.WriteRow(0, id*2, row, 0)
		if n := st.TouchedRows(0); n > maxLoose {
			t.Fatalf("%d rows staged after %d writes, bound %d", n, id+1, maxLoose)
		}
	}
	if got := mustDigest(t, st); got != want.Digest(nil) {
		t.Errorf("digest %s, one process %s", got, want.Digest(nil))
	}
}
