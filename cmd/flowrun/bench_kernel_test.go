package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/bench"
)

// flowrun bench kernel runs every operator on small tables and reports
// the sizes it used and a positive throughput.
func TestBenchKernel(t *testing.T) {
	unique := map[string]int64{} // op → unique rows
	for _, args := range [][]string{
		{"--op", "gather-reduce", "--threads", "2"},
		{"--op", "gather-reduce", "--reduce", "mean", "--options", `{"impl":"go"}`},
		{"--op", "expand-coalesce", "--dist", "zipf"},
		{"--op", "scatter", "--optimizer", "rowwise_adagrad"},
		{"--op", "cast-gather-reduce", "--dist", "zipf"},
	} {
		base := []string{"bench", "kernel", "--tables", "2", "--rows", "1000", "--dim", "12", "--batch", "16", "--lookups", "5", "--reps", "3", "--warmup", "1", "--json"}
		r := mustFlowrun(t, append(base, args...)...)
		var res bench.KernelResult
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("%v: %v in %q", args, err, r.stdout)
		}
		if res.GBps <= 0 || res.RowBytes != 2*16*5*12*4 || res.Tables != 2 || res.Rows != 1000 || res.Dim != 12 || res.Op != args[1] {
			t.Errorf("%v: %+v", args, res)
		}
		if res.Op == "scatter" && res.Stride != 13 {
			t.Errorf("%v: stride %d, want dim + 1 for row-wise Adagrad", args, res.Stride)
		}
		if res.Op == "expand-coalesce" && (res.UniqueRows <= 0 || res.UniqueRows > 2*16*5) {
			t.Errorf("%v: %d unique rows", args, res.UniqueRows)
		}
		unique[res.Op] = res.UniqueRows
	}
	// The casted gather-reduce coalesces into the rows expand-coalesce
	// finds, from the same indices.
	if unique["cast-gather-reduce"] != unique["expand-coalesce"] {
		t.Errorf("cast-gather-reduce coalesced %d rows, expand-coalesce %d", unique["cast-gather-reduce"], unique["expand-coalesce"])
	}
	r := mustFlowrun(t, "bench", "kernel", "--tables", "1", "--rows", "100", "--batch", "4", "--reps", "1")
	if !strings.Contains(r.stdout, "GB/s") {
		t.Errorf("table output without GB/s:\n%s", r.stdout)
	}
}

func TestBenchKernelUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--op", "cast"}, {"--dist", "normal"}, {"--threads", "0"}, {"--optimizer", "adam"}, {"--options", "[1]"}, {"--dist", "zipf", "--zipf-s", "1"},
	} {
		r := flowrun(t, append([]string{"bench", "kernel"}, args...)...)
		var ue usageError
		if !errors.As(r.err, &ue) {
			t.Errorf("%v: err %v, want a usage error", args, r.err)
		}
	}
}
