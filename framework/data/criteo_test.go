package data

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data/datatest"
)

// criteoLine builds a line from its 40 fields.
func criteoLine(label string, ints []string, cats []string) string {
	f := append([]string{label}, ints...)
	return strings.Join(append(f, cats...), "\t")
}

func fields(n int, v string) []string {
	f := make([]string, n)
	for i := range f {
		f[i] = v
	}
	return f
}

// Preprocessing as the DLRM reference does it: missing → 0, negative → 0,
// then log(x+1); categorical hex, missing → 0.
func TestParseCriteoLineAsDLRM(t *testing.T) {
	ints := fields(13, "")
	ints[0], ints[1], ints[2], ints[12] = "5", "-2", "0", "123456789"
	cats := fields(26, "")
	cats[0], cats[1], cats[25] = "68fd1e64", "FFFFFFFF", "0000000a"
	var s CriteoSample
	if err := ParseCriteoLine([]byte(criteoLine("1", ints, cats)), &s); err != nil {
		t.Fatal(err)
	}
	if s.Label != 1 {
		t.Errorf("label %v", s.Label)
	}
	wantDense := map[int]float64{0: math.Log(6), 1: 0, 2: 0, 3: 0, 12: math.Log1p(123456789)}
	for i, want := range wantDense {
		if math.Abs(float64(s.Dense[i])-want) > 1e-6 {
			t.Errorf("I%d = %v, want %v", i+1, s.Dense[i], want)
		}
	}
	if s.Cat[0] != 0x68fd1e64 || s.Cat[1] != 0xffffffff || s.Cat[2] != 0 || s.Cat[25] != 10 {
		t.Errorf("categorical %x", s.Cat)
	}
}

// Every malformed line is an error naming the file, the line and the
// field; a CRLF line ending and a last line without a newline are fine.
func TestCriteoReaderErrorsNameFileAndLine(t *testing.T) {
	good := criteoLine("0", fields(13, "1"), fields(26, "abc"))
	for name, c := range map[string]struct{ line, want string }{
		"too few fields": {"1\t2\t3", "train.txt:2: 3 tab-separated fields, want 40"},
		"test file":      {criteoLine("", fields(13, "1"), fields(26, "abc"))[1:], "39 tab-separated fields, want 40 (label, 13 integer, 26 categorical); a Criteo test file has no label column"},
		"label":          {criteoLine("2", fields(13, "1"), fields(26, "a")), `train.txt:2: field 1 (label): "2" is not 0 or 1`},
		"empty label":    {criteoLine("", fields(13, "1"), fields(26, "a")), "field 1 (label) is empty"},
		"float integer":  {criteoLine("1", append(fields(12, "1"), "1.5"), fields(26, "a")), `field 14 (I13): "1.5" is not an integer`},
		"huge integer":   {criteoLine("1", append(fields(12, "1"), strings.Repeat("9", 30)), fields(26, "a")), "(I13)"},
		"not hex":        {criteoLine("1", fields(13, "1"), append(fields(25, "a"), "xyz")), `field 40 (C26): "xyz" is not a hexadecimal value`},
		"long hex":       {criteoLine("1", fields(13, "1"), append([]string{strings.Repeat("f", 17)}, fields(25, "a")...)), "field 15 (C1)"},
		"space in field": {criteoLine("1", append([]string{" 1"}, fields(12, "1")...), fields(26, "a")), "field 2 (I1)"},
		"blank line":     {"", "train.txt:2: 1 tab-separated fields"},
		"very long line": {strings.Repeat("1\t", maxLine), "train.txt:2: line longer than"},
		"binary garbage": {"\x00\xff\t\x80", "train.txt:2: 2 tab-separated fields"},
	} {
		t.Run(name, func(t *testing.T) {
			in := good + "\n" + c.line + "\n" + good + "\n"
			r := NewCriteoReader(strings.NewReader(in), "train.txt")
			var s CriteoSample
			if err := r.Next(&s); err != nil {
				t.Fatalf("line 1: %v", err)
			}
			err := r.Next(&s)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "train.txt:2: ") {
				t.Fatalf("err = %v, want train.txt:2: … %q", err, c.want)
			}
			if again := r.Next(&s); again != err {
				t.Errorf("after an error Next returned %v", again)
			}
		})
	}
	r := NewCriteoReader(strings.NewReader(good+"\r\n"+good), "train.txt")
	var s CriteoSample
	for i := 0; i < 2; i++ {
		if err := r.Next(&s); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
	}
	if err := r.Next(&s); err != io.EOF {
		t.Fatalf("after the last line: %v, want io.EOF", err)
	}
}

// A converted Criteo file reads back as the TSV parses, each categorical
// value hashed to value mod rows; its last batches are the held-out ones.
func TestConvertCriteoRoundTrip(t *testing.T) {
	var tsv bytes.Buffer
	if err := datatest.CriteoTSV(&tsv, 300, 1); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "criteo.frb")
	const rows = 1000
	h, err := ConvertCriteo(bytes.NewReader(tsv.Bytes()), "train.txt", out, ConvertOptions{Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	if h.Samples != 300 || h.Tables != 26 || h.Lookups != 1 || h.Dense != 13 || h.MaxRows() != rows {
		t.Fatalf("header %+v", h)
	}
	d := config.Dataset{Kind: "file", Path: out, Batches: 2, BatchSize: 100, Tables: 26, Rows: rows, Dim: 4,
		Lookups: 1, DenseFeatures: 13, EvalBatches: 1}
	f, err := Open(out, d)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewCriteoReader(bytes.NewReader(tsv.Bytes()), "train.txt")
	for b := uint64(0); b < 3; b++ {
		a := NewArrays(d)
		if err := f.Fill(b, b == 2, a); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < d.BatchSize; i++ {
			var s CriteoSample
			if err := r.Next(&s); err != nil {
				t.Fatal(err)
			}
			if a.Labels[i] != s.Label {
				t.Fatalf("batch %d sample %d: label %v, want %v", b, i, a.Labels[i], s.Label)
			}
			for j := range s.Dense {
				if a.Dense[i*13+j] != s.Dense[j] {
					t.Fatalf("batch %d sample %d: dense %d = %v, want %v", b, i, j, a.Dense[i*13+j], s.Dense[j])
				}
			}
			for tb := range s.Cat {
				if want := int64(s.Cat[tb] % rows); a.IDs[tb*d.BatchSize+i] != want {
					t.Fatalf("batch %d sample %d: table %d ID %d, want %d", b, i, tb, a.IDs[tb*d.BatchSize+i], want)
				}
			}
		}
	}
}

// A conversion that fails leaves no file behind, and says where it failed.
func TestConvertCriteoFailsCleanly(t *testing.T) {
	var tsv bytes.Buffer
	datatest.CriteoTSV(&tsv, 10, 1)
	tsv.WriteString("1\tnot\tenough\n")
	out := filepath.Join(t.TempDir(), "criteo.frb")
	_, err := ConvertCriteo(&tsv, "day_0.tsv", out, ConvertOptions{})
	if err == nil || !strings.Contains(err.Error(), "day_0.tsv:11:") {
		t.Fatalf("err = %v, want day_0.tsv:11", err)
	}
	for _, p := range []string{out, out + ".tmp"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (%v)", p, err)
		}
	}
	if _, err := ConvertCriteo(strings.NewReader(""), "empty.txt", out, ConvertOptions{}); err == nil {
		t.Error("an empty input converted")
	}
}

// FuzzCriteoTSV: no input makes the reader panic or loop; it parses a
// line or names the line it cannot parse, and what it parses is what a
// model can take (label 0 or 1, finite non-negative dense features).
func FuzzCriteoTSV(f *testing.F) {
	var tsv bytes.Buffer
	datatest.CriteoTSV(&tsv, 3, 7)
	f.Add(tsv.Bytes())
	f.Add([]byte(criteoLine("1", fields(13, ""), fields(26, "")) + "\r\n"))
	f.Add([]byte(criteoLine("0", fields(13, "-9223372036854775808"), fields(26, "FFFFFFFFFFFFFFFF"))))
	f.Add([]byte("1\t2\n\n\t\t"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewCriteoReader(bytes.NewReader(in), "fuzz.tsv")
		var s CriteoSample
		lines := bytes.Count(in, []byte("\n")) + 1
		for n := 0; ; n++ {
			if n > lines {
				t.Fatalf("%d samples from %d lines", n, lines)
			}
			err := r.Next(&s)
			if err == io.EOF {
				return
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), "fuzz.tsv:") {
					t.Fatalf("error %q does not name the file and line", err)
				}
				return
			}
			if s.Label != 0 && s.Label != 1 {
				t.Fatalf("label %v", s.Label)
			}
			for _, x := range s.Dense {
				if !(x >= 0) || math.IsInf(float64(x), 0) {
					t.Fatalf("dense %v", x)
				}
			}
		}
	})
}
