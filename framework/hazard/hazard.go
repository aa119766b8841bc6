// Package hazard is the run-time hazard checker behind `flowrun run
// --check-hazards`: it verifies, while a graph runs, that no stage reads a
// Storage slot or a host-table row that an earlier batch still in flight
// has yet to write — the read-after-write dependencies RAW-1 … RAW-4 of
// ScratchPipe (Sec. IV-B) — and fails the read with the batch, the stage,
// the slot or row and the writer when one does.
//
// Why a checker: ScratchPipe's plan removes the hazards by construction (its
// Hold mask keeps the past window's and the future window's IDs from being
// evicted), and a pipelined run that gets this wrong does not crash — it
// trains on a stale row and ends with a different model digest, far from
// the cause. The checker turns that into an error at the read that went
// wrong.
//
// How: the plan stage declares, right after planning batch b, every write
// b will make further down the pipeline (Checker.Plan): the Storage slots
// insert fills and train updates, and the host rows insert writes back.
// Each write stays pending until the writing stage reports it done
// (Checker.Wrote). A stage that reads (collect, train) asks first
// (Checker.ReadSlots, ReadRows, ReadTriples); the read fails when a batch
// b' < b still has a pending write to what b reads. Reads by b of its own
// pending writes are program order, not hazards; pending writes of later
// batches (planned ahead) are write-after-read and not this package's
// concern.
//
// The checks and the paper's numbering (the roles the stages declare, see
// Role, as the reader and the writer; "role/name" ids are reduced to their
// role):
//
//	RAW-1  slot      written by train   (Parameter Update)  read by train   (Embedding Forward)
//	RAW-2  slot      written by train   (Parameter Update)  read by collect (victim read-out)
//	RAW-3  slot      written by insert  (fill)              read by collect (victim read-out)
//	RAW-4  host row  written by insert  (victim write-back) read by collect (missed-row gather)
//
// Any other pending write a read meets is reported as an unnumbered RAW
// hazard (RAW 0), e.g. train reading a slot an earlier batch's insert has
// not filled yet, which an in-order pipeline cannot produce.
//
// A Checker in its default mode (New) reports what the run actually did:
// a write pending at the moment of the read. In strict mode (NewStrict) it
// also reports a write that happened to finish in time but that the
// pipeline's capacity does not order before the read (Strict: the stage
// order, the batches queued between stages, the batches in flight), so a
// plan that is wrong fails on every run, not only on the runs whose timing
// exposes it.
//
// The package imports nothing from the framework: the stages and the
// runtime hand it plain sequence numbers, roles (or, for a stage without
// one, its kind, which only places it in a strict order) and index slices.
package hazard

import (
	"fmt"
	"strings"
)

// Kind is what a write or a read addresses.
type Kind uint8

const (
	// Slot is a slot of ScratchPipe's Storage (the device-side cache),
	// addressed per table by slot index.
	Slot Kind = iota + 1
	// HostRow is a row of a host (CPU) embedding table, addressed per
	// table by row ID.
	HostRow
)

func (k Kind) String() string {
	switch k {
	case Slot:
		return "slot"
	case HostRow:
		return "row"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Role is the part a stage plays in ScratchPipe's pipeline (Sec. IV-C,
// Fig. 8), by which the paper numbers its read-after-write hazards. The
// checker knows no stage kind: a stage that reads or writes Storage slots
// or host rows declares its role (stage.WithHazardRole) and names it in
// its reads, and the plan declares each write at the role that makes it.
// A role's string is the name the checker reports it by.
type Role string

// The roles of ScratchPipe's pipeline the RAW numbering refers to.
const (
	// Collect reads the victims' slots and the missed host rows.
	Collect Role = "collect"
	// Insert fills slots and writes the victims back to their host rows.
	Insert Role = "insert"
	// Train updates the slots, and the bypassed host rows, it trains in.
	Train Role = "train"
)

// Hazard is a read of a slot or row that an earlier batch still had to
// write. It is the error the Read methods return.
type Hazard struct {
	// Seq and Stage are the reading batch and stage.
	Seq   uint64
	Stage string
	Kind  Kind
	Table int
	// Index is the slot or the host row read.
	Index int64
	// Row is, for a slot, the row involved: the row the reader expected
	// there when it said (ReadTriples), else the row the writer declared
	// it would write, else -1. For a host row it equals Index.
	Row int64
	// Writer and WriterStage are the earlier batch and the stage at which
	// it writes.
	Writer      uint64
	WriterStage string
	// RAW is the paper's dependency number (1–4), or 0 for a read-after-
	// write the paper does not number.
	RAW int
	// InFlight is true when the write was still pending at the read. It is
	// false only in strict mode, for a write that had finished but that
	// nothing in the pipeline orders before the read.
	InFlight bool
}

func (h *Hazard) Error() string {
	var b strings.Builder
	b.WriteString("hazard RAW")
	if h.RAW > 0 {
		fmt.Fprintf(&b, "-%d", h.RAW)
	}
	fmt.Fprintf(&b, ": batch %d %s reads ", h.Seq, h.Stage)
	if h.Kind == Slot {
		fmt.Fprintf(&b, "slot %d of table %d", h.Index, h.Table)
		if h.Row >= 0 {
			fmt.Fprintf(&b, " (row %d)", h.Row)
		}
	} else {
		fmt.Fprintf(&b, "%s %d of table %d", h.Kind, h.Index, h.Table)
	}
	verb := "write"
	if h.Kind == HostRow {
		verb = "write back"
	}
	if h.InFlight {
		fmt.Fprintf(&b, " that batch %d has yet to %s at %s", h.Writer, verb, h.WriterStage)
	} else {
		fmt.Fprintf(&b, " that batch %d writes at %s, and nothing in the pipeline orders that write before this read", h.Writer, h.WriterStage)
	}
	return b.String()
}

// RAW numbers a read-after-write by the paper's Figure 8: the kind of
// target, the role that writes it and the role that reads it. It answers
// 0 for a pair the paper does not number. Ids of the form "role/name" are
// reduced to their role.
func RAW(k Kind, writer, reader string) int {
	w, r := Role(stageKind(writer)), Role(stageKind(reader))
	switch {
	case k == Slot && w == Train && r == Train:
		return 1
	case k == Slot && w == Train && r == Collect:
		return 2
	case k == Slot && w == Insert && r == Collect:
		return 3
	case k == HostRow && w == Insert && r == Collect:
		return 4
	}
	return 0
}

// stageKind reduces a stage id "kind/name" to its kind; a bare kind is
// returned as is.
func stageKind(s string) string {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i]
	}
	return s
}
