package hazard

import (
	"fmt"
	"reflect"
	"testing"
)

func TestPlannedBatchWrites(t *testing.T) {
	pb := PlannedBatch{
		// Table 0: IDs 10 (hit in slot 0), 11 (miss → slot 1), 11 again
		// (the same miss), 12 (bypassed). Table 1: 20 (miss → slot 0).
		IndexStart: []int64{0, 4, 5},
		IDs:        []int64{10, 11, 11, 12, 20},
		Slots:      []int64{0, 1, 1, -1, 0},
		Hits:       []byte{1, 0, 0, 0, 0},
		Victims:    []int64{0, 99, 1, 1, 98, 0, 0, 0, 0},
		NVictims:   2,
		Trains:     true,
	}
	w, err := pb.Writes()
	if err != nil {
		t.Fatal(err)
	}
	want := Writes{
		{Stage: "insert", Kind: Slot, Table: 0, Index: []int64{1, 1}, Rows: []int64{11, 11}},
		{Stage: "train", Kind: Slot, Table: 0, Index: []int64{0, 1, 1, -1}},
		{Stage: "insert", Kind: Slot, Table: 1, Index: []int64{0}, Rows: []int64{20}},
		{Stage: "train", Kind: Slot, Table: 1, Index: []int64{0}},
		{Stage: "insert", Kind: HostRow, Table: 0, Index: []int64{99}},
		{Stage: "insert", Kind: HostRow, Table: 1, Index: []int64{98}},
	}
	if !reflect.DeepEqual(w, want) {
		t.Fatalf("writes\n%+v\nwant\n%+v", w, want)
	}
	c := New()
	if err := c.Plan(0, w); err != nil {
		t.Fatal(err)
	}
	// slot 0:1 fill + slots 0:0, 0:1 train + 1:0 fill and train + 2 rows.
	if got := c.Pending(); got != 7 {
		t.Fatalf("pending %d, want 7", got)
	}

	pb.Trains = false
	if w, _ = pb.Writes(); len(w) != 4 {
		t.Fatalf("a held-out batch declares %d write sets, want 4 (no train)", len(w))
	}
}

func TestPlannedBatchWritesRejects(t *testing.T) {
	good := func() PlannedBatch {
		return PlannedBatch{IndexStart: []int64{0, 1}, IDs: []int64{5}, Slots: []int64{0}, Hits: []byte{0}, Victims: []int64{0, 1, 0}, NVictims: 1}
	}
	for i, mod := range []func(*PlannedBatch){
		func(p *PlannedBatch) { p.IndexStart = nil },
		func(p *PlannedBatch) { p.IndexStart = []int64{0, 2} },
		func(p *PlannedBatch) { p.Hits = nil },
		func(p *PlannedBatch) { p.NVictims = 2 },
		func(p *PlannedBatch) { p.NVictims = -1 },
		func(p *PlannedBatch) { p.Victims[0] = 1 },
		func(p *PlannedBatch) { p.IndexStart = []int64{1, 0, 1} },
	} {
		p := good()
		mod(&p)
		if _, err := p.Writes(); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
	if _, err := good().Writes(); err != nil {
		t.Fatal(err)
	}
}

// How the stages use a Checker, in pipeline order.
func Example() {
	c := New()
	// plan, batch 5: it will fill slot 7 of table 0 with row 42 and train it.
	_ = c.Plan(5, Writes{
		{Stage: "insert", Kind: Slot, Table: 0, Index: []int64{7}, Rows: []int64{42}},
		{Stage: "train", Kind: Slot, Table: 0, Index: []int64{7}, Rows: []int64{42}},
	})
	// plan, batch 6 (hold windows 0): evicts row 42 from slot 7.
	_ = c.Plan(6, nil)
	// collect, batch 6, reads its victim out of slot 7 before batch 5 trained.
	fmt.Println(c.ReadTriples(6, "collect", Slot, []int64{0, 42, 7}, 1))
	// insert and train finish batch 5.
	c.Wrote(5, "insert")
	c.Wrote(5, "train")
	c.Done(5)
	fmt.Println(c.ReadTriples(6, "collect", Slot, []int64{0, 42, 7}, 1))
	// Output:
	// hazard RAW-3: batch 6 collect reads slot 7 of table 0 (row 42) that batch 5 has yet to write at insert
	// <nil>
}
