package data

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// MovieLens ratings: one rating a line, `userId,movieId,rating,timestamp`
// (ml-latest, ml-20m, ml-25m ratings.csv, whose header line is skipped),
// or the same four fields separated by "::" (ml-1m, ml-10m ratings.dat) or
// a tab (ml-100k u.data). The separator is the first line's.

// Rating is one MovieLens rating.
type Rating struct {
	User, Movie int64
	// Rating is in stars, 0.5 to 5.
	Rating float64
	// Timestamp is seconds since 1970.
	Timestamp int64
}

// MovieLensReader reads MovieLens ratings. Its errors name the input and
// the line; it never panics on any input.
type MovieLensReader struct {
	lineReader
	sep []byte
}

// NewMovieLensReader reads ratings from r; name prefixes errors.
func NewMovieLensReader(r io.Reader, name string) *MovieLensReader {
	return &MovieLensReader{lineReader: newLineReader(r, name)}
}

// Next parses the next rating into x; io.EOF after the last, and after any
// error that error again.
func (m *MovieLensReader) Next(x *Rating) error {
	for {
		line, err := m.next()
		if err != nil {
			return err
		}
		if m.sep == nil {
			switch {
			case bytes.Contains(line, []byte("::")):
				m.sep = []byte("::")
			case bytes.IndexByte(line, '\t') >= 0:
				m.sep = []byte("\t")
			default:
				m.sep = []byte(",")
			}
			if len(line) > 0 && (line[0] < '0' || line[0] > '9') && bytes.HasPrefix(bytes.ToLower(line), []byte("userid")) {
				continue // ratings.csv's header
			}
		}
		if err := m.parse(line, x); err != nil {
			return m.fail(err)
		}
		return nil
	}
}

func (m *MovieLensReader) parse(line []byte, x *Rating) error {
	f := bytes.Split(line, m.sep)
	if len(f) != 4 {
		return fmt.Errorf("%d fields separated by %q, want 4 (userId, movieId, rating, timestamp)", len(f), m.sep)
	}
	var err error
	id := func(i int, what string) int64 {
		v, perr := strconv.ParseInt(string(f[i]), 10, 64)
		if perr != nil || v < 0 {
			if err == nil {
				err = fmt.Errorf("field %d (%s): %s is not a non-negative integer", i+1, what, quote(f[i]))
			}
		}
		return v
	}
	x.User = id(0, "userId")
	x.Movie = id(1, "movieId")
	if err != nil {
		return err
	}
	r, perr := strconv.ParseFloat(string(f[2]), 64)
	if perr != nil || !(r >= 0 && r <= 5) {
		return fmt.Errorf("field 3 (rating): %s is not a number of stars from 0 to 5", quote(f[2]))
	}
	x.Rating = r
	ts, perr := strconv.ParseInt(string(f[3]), 10, 64)
	if perr != nil {
		return fmt.Errorf("field 4 (timestamp): %s is not an integer", quote(f[3]))
	}
	x.Timestamp = ts
	return nil
}

// MovieLensLiked is the rating from which a rating counts as a positive
// label: 4 stars or more, the usual cut for "liked" on MovieLens's
// 5-star scale.
const MovieLensLiked = 4.0

// MovieLensDense is the number of dense features of a MovieLens sample.
const MovieLensDense = 2

// ConvertMovieLens reads MovieLens ratings from r (name is for messages)
// and writes the batch file out: two tables of one lookup, user (table 0)
// and movie (table 1); label 1 for a rating of MovieLensLiked or more;
// two dense features known before the rating was made: log(1 + the
// user's earlier ratings) and log(1 + the movie's earlier ratings).
//
// Samples are in time order (timestamp, then user, then movie), so the
// held-out batches, the file's last, are the latest ratings: the model is
// scored on the future, never on what it trained on. Users and movies are
// numbered densely in the order of their IDs; with opt.Rows below their
// count, number mod Rows. The ratings are held in memory to be sorted
// (28 bytes each at most: ml-25m takes 700 MB).
func ConvertMovieLens(r io.Reader, name, out string, opt ConvertOptions) (*Header, error) {
	if opt.Rows < 0 {
		return nil, fmt.Errorf("rows must be ≥ 0, got %d", opt.Rows)
	}
	type rec struct {
		ts          int64
		user, movie int32 // the IDs, then their dense numbers
		liked       bool
	}
	mr := NewMovieLensReader(r, name)
	var recs []rec
	var x Rating
	for opt.Limit == 0 || uint64(len(recs)) < opt.Limit {
		if err := mr.Next(&x); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if x.User > math.MaxInt32 || x.Movie > math.MaxInt32 {
			return nil, fmt.Errorf("%s:%d: user %d or movie %d is above %d, the largest ID this converter numbers", name, mr.line, x.User, x.Movie, math.MaxInt32)
		}
		recs = append(recs, rec{ts: x.Timestamp, user: int32(x.User), movie: int32(x.Movie), liked: x.Rating >= MovieLensLiked})
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: no ratings", name)
	}
	// Number users and movies densely in ID order: the sorted distinct
	// IDs, and each ID's position among them.
	ids := make([]int32, len(recs))
	number := func(get func(*rec) *int32) int {
		for i := range recs {
			ids[i] = *get(&recs[i])
		}
		slices.Sort(ids)
		distinct := slices.Compact(ids)
		for i := range recs {
			p := get(&recs[i])
			n, _ := slices.BinarySearch(distinct, *p)
			*p = int32(n)
		}
		return len(distinct)
	}
	nUsers := number(func(r *rec) *int32 { return &r.user })
	nMovies := number(func(r *rec) *int32 { return &r.movie })
	ids = nil
	slices.SortStableFunc(recs, func(a, b rec) int {
		return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.user, b.user), cmp.Compare(a.movie, b.movie))
	})

	fold := func(n int) int64 {
		if opt.Rows > 0 {
			return min(int64(n), opt.Rows)
		}
		return int64(n)
	}
	h := Header{Source: "movielens", Tables: 2, Lookups: 1, Dense: MovieLensDense,
		Rows: []int64{fold(nUsers), fold(nMovies)}}
	w, err := Create(out, h)
	if err != nil {
		return nil, err
	}
	userSeen := make([]int32, nUsers)
	movieSeen := make([]int32, nMovies)
	dense := make([]float32, MovieLensDense)
	sample := make([]int64, 2)
	for _, x := range recs {
		dense[0] = float32(math.Log1p(float64(userSeen[x.user])))
		dense[1] = float32(math.Log1p(float64(movieSeen[x.movie])))
		userSeen[x.user]++
		movieSeen[x.movie]++
		sample[0] = int64(x.user) % h.Rows[0]
		sample[1] = int64(x.movie) % h.Rows[1]
		var label float32
		if x.liked {
			label = 1
		}
		if err := w.Append(label, dense, sample); err != nil {
			w.Abort()
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	h.Samples = w.Samples()
	return &h, nil
}
