package engine

import (
	"bytes"
	"testing"
)

// TestSplit: an array's pages become data chunks of at most the limit
// and ranges of all-zero pages; put back together at their offsets they
// are the array, and a chunk never reaches past its own array.
func TestSplit(t *testing.T) {
	const page = len(zeroPage)
	buf := make([]byte, 10*page+100)
	for _, p := range []int{0, 1, 2, 5, 9} {
		buf[p*page+7] = byte(p + 1)
	}
	buf[10*page+50] = 9
	a, b := buf[:4*page:4*page], buf[4*page:] // two arrays, back to back
	var chunks []chunk
	var zeros []int64
	chunks, zeros = split(chunks, zeros, a, 0, int64(2*page))
	chunks, zeros = split(chunks, zeros, b, int64(4*page), int64(2*page))
	got := bytes.Repeat([]byte{0xff}, len(buf))
	for _, c := range chunks {
		if len(c.data) > 2*page {
			t.Errorf("chunk at %d: %d bytes, over the limit", c.off, len(c.data))
		}
		if c.off < int64(4*page) && c.off+int64(len(c.data)) > int64(4*page) {
			t.Errorf("chunk at %d reaches past its array", c.off)
		}
		copy(got[c.off:], c.data)
	}
	for i := 0; i < len(zeros); i += 2 {
		clear(got[zeros[i] : zeros[i]+zeros[i+1]])
	}
	if !bytes.Equal(got, buf) {
		t.Error("the chunks and zero ranges do not rebuild the arrays")
	}
	var data int
	for _, c := range chunks {
		data += len(c.data)
	}
	if data != 5*page+100 {
		t.Errorf("%d data bytes sent, want the 5 pages with data and the tail", data)
	}
}
