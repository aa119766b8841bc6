package data

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/data/datatest"
)

// The three layouts MovieLens has shipped ratings in read the same.
func TestMovieLensReaderFormats(t *testing.T) {
	want := []Rating{{1, 31, 2.5, 1260759144}, {7, 1029, 4, 1260759179}}
	for name, in := range map[string]string{
		"ratings.csv (ml-latest, ml-20m, ml-25m)": "userId,movieId,rating,timestamp\n1,31,2.5,1260759144\n7,1029,4.0,1260759179\n",
		"ratings.dat (ml-1m, ml-10m)":             "1::31::2.5::1260759144\r\n7::1029::4::1260759179",
		"u.data (ml-100k)":                        "1\t31\t2.5\t1260759144\n7\t1029\t4\t1260759179\n",
	} {
		r := NewMovieLensReader(strings.NewReader(in), "ratings")
		for i, w := range want {
			var x Rating
			if err := r.Next(&x); err != nil || x != w {
				t.Errorf("%s: rating %d = %+v, %v; want %+v", name, i, x, err, w)
			}
		}
		var x Rating
		if err := r.Next(&x); err == nil {
			t.Errorf("%s: a third rating %+v", name, x)
		}
	}
}

func TestMovieLensReaderErrorsNameFileAndLine(t *testing.T) {
	for in, want := range map[string]string{
		"userId,movieId,rating,timestamp\n1,2,3\n":   "ratings.csv:2: 3 fields separated by \",\", want 4",
		"userId,movieId,rating,timestamp\nx,2,3,4\n": `ratings.csv:2: field 1 (userId): "x" is not a non-negative integer`,
		"1,-2,3,4\n":            `ratings.csv:1: field 2 (movieId): "-2"`,
		"1,2,5.5,4\n":           `ratings.csv:1: field 3 (rating): "5.5" is not a number of stars from 0 to 5`,
		"1,2,NaN,4\n":           `field 3 (rating): "NaN"`,
		"1,2,3,4\n1,2,3,soon\n": `ratings.csv:2: field 4 (timestamp): "soon" is not an integer`,
	} {
		r := NewMovieLensReader(strings.NewReader(in), "ratings.csv")
		var x Rating
		var err error
		for err == nil {
			err = r.Next(&x)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}

// A MovieLens conversion: user and movie numbered densely in ID order,
// samples in time order, label rating ≥ 4, dense features the user's and
// the movie's earlier ratings.
func TestConvertMovieLens(t *testing.T) {
	in := "userId,movieId,rating,timestamp\n" +
		"10,500,4.0,300\n" +
		"10,7,2.0,100\n" +
		"3,500,5.0,200\n" +
		"3,7,3.5,400\n"
	out := filepath.Join(t.TempDir(), "ml.frb")
	h, err := ConvertMovieLens(strings.NewReader(in), "ratings.csv", out, ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Samples != 4 || h.Tables != 2 || h.Rows[0] != 2 || h.Rows[1] != 2 || h.Dense != MovieLensDense {
		t.Fatalf("header %+v", h)
	}
	d := config.Dataset{Kind: "file", Path: out, Batches: 1, BatchSize: 4, Tables: 2, Rows: 2, Dim: 4, Lookups: 1, DenseFeatures: 2}
	f, err := Open(out, d)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := NewArrays(d)
	if err := f.Fill(0, false, a); err != nil {
		t.Fatal(err)
	}
	// Time order: (10,7) t=100, (3,500) t=200, (10,500) t=300, (3,7) t=400;
	// users 3 → 0, 10 → 1; movies 7 → 0, 500 → 1.
	wantUsers := []int64{1, 0, 1, 0}
	wantMovies := []int64{0, 1, 1, 0}
	wantLabels := []float32{0, 1, 1, 0}
	wantPrior := [][2]float64{{0, 0}, {0, 0}, {1, 1}, {1, 1}}
	for i := 0; i < 4; i++ {
		if a.IDs[i] != wantUsers[i] || a.IDs[4+i] != wantMovies[i] || a.Labels[i] != wantLabels[i] {
			t.Errorf("sample %d: user %d movie %d label %v; want %d %d %v", i, a.IDs[i], a.IDs[4+i], a.Labels[i],
				wantUsers[i], wantMovies[i], wantLabels[i])
		}
		for j := 0; j < 2; j++ {
			if want := float32(math.Log1p(wantPrior[i][j])); a.Dense[2*i+j] != want {
				t.Errorf("sample %d: dense %d = %v, want %v", i, j, a.Dense[2*i+j], want)
			}
		}
	}
	// Fewer rows than users or movies folds their numbers.
	h, err = ConvertMovieLens(strings.NewReader(in), "ratings.csv", out, ConvertOptions{Rows: 1})
	if err != nil || h.Rows[0] != 1 || h.Rows[1] != 1 {
		t.Fatalf("rows 1: %+v, %v", h, err)
	}
}

func TestConvertMovieLensFixture(t *testing.T) {
	var csv bytes.Buffer
	if err := datatest.MovieLensCSV(&csv, 30, 40, 1); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ml.frb")
	h, err := ConvertMovieLens(&csv, "ratings.csv", out, ConvertOptions{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if h.Samples != 500 || h.Rows[0] > 30 || h.Rows[1] > 40 {
		t.Fatalf("header %+v", h)
	}
}
