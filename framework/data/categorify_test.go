package data

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data/datatest"
)

// A categorified conversion numbers each field's values densely in order
// of first occurrence: the same value always gets the same row, a new
// value the next row, and each table has exactly its field's values. With
// a minimum count, the rare values share row 0 and the others count from 1.
func TestConvertCriteoCategorify(t *testing.T) {
	var tsv bytes.Buffer
	if err := datatest.CriteoTSV(&tsv, 400, 2); err != nil {
		t.Fatal(err)
	}
	counts, err := CountCriteo(bytes.NewReader(tsv.Bytes()), "train.txt", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, minCount := range []uint64{0, 3} {
		out := filepath.Join(t.TempDir(), "criteo.frb")
		opt := ConvertOptions{Categorify: true, MinCount: minCount, Counts: counts}
		h, err := ConvertCriteo(bytes.NewReader(tsv.Bytes()), "train.txt", out, opt)
		if err != nil {
			t.Fatal(err)
		}
		d := config.Dataset{Kind: "file", Path: out, Batches: 4, BatchSize: 100, Tables: 26, Rows: 1, TableRows: h.Rows,
			Dim: 4, Lookups: 1, DenseFeatures: 13, Locality: "zipf", ZipfS: 1}
		f, err := Open(out, d)
		if err != nil {
			t.Fatal(err)
		}
		r := NewCriteoReader(bytes.NewReader(tsv.Bytes()), "train.txt")
		first := int64(0)
		if minCount > 1 {
			first = 1
		}
		rowOf := make([]map[uint64]int64, 26)
		for tb := range rowOf {
			rowOf[tb] = map[uint64]int64{}
		}
		a := NewArrays(d)
		for b := uint64(0); b < 4; b++ {
			if err := f.Fill(b, false, a); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < d.BatchSize; i++ {
				var s CriteoSample
				if err := r.Next(&s); err != nil {
					t.Fatal(err)
				}
				for tb, v := range s.Cat {
					id := a.IDs[tb*d.BatchSize+i]
					if minCount > 1 && counts[tb][v] < minCount {
						if id != 0 {
							t.Fatalf("field %d value %x seen %d times: row %d, want the rare row 0", tb, v, counts[tb][v], id)
						}
						continue
					}
					want, ok := rowOf[tb][v]
					if !ok {
						want = first + int64(len(rowOf[tb]))
						rowOf[tb][v] = want
					}
					if id != want {
						t.Fatalf("min count %d: sample %d field %d value %x: row %d, want %d", minCount, b*100+uint64(i), tb, v, id, want)
					}
				}
			}
		}
		f.Close()
		small := append([]int64(nil), h.Rows...)
		small[5]--
		d.TableRows = small
		if _, err := Open(out, d); err == nil || !strings.Contains(err.Error(), "table_rows") || !strings.Contains(err.Error(), "in table 5") {
			t.Errorf("a graph with fewer rows in table 5 than the file opened it: %v", err)
		}
		for tb, m := range rowOf {
			if want := max(1, first+int64(len(m))); h.Rows[tb] != want {
				t.Errorf("min count %d: table %d has %d rows, want %d", minCount, tb, h.Rows[tb], want)
			}
		}
	}
}
