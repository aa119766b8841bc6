package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/flowrun/flowrun/framework/results"
)

// BenchmarkPlacement runs graphs/scratchpipe.yaml (its default sizes,
// fewer batches) three ways, alternated in each iteration: in one
// process; with plan and exchange on two workers on the run's host
// (shared-memory batches); and with the same two workers labelled
// another host, so that every edge to and from them carries the batch's
// arrays by value. The workers are this process's goroutines with
// connections of their own to a NATS server on loopback TCP. It reports
// the wall time per batch of each (and the placed ones as a ratio to one
// process), and for the by-value run the bytes, messages and sending
// time per batch per edge (messages besides the batch's header), and the
// share of the stages' time per batch (summed over stages and sends)
// spent sending arrays.
//
//	go test ./cmd/flowrun -run '^$' -bench Placement -benchtime 3x
func BenchmarkPlacement(b *testing.B) {
	graph := filepath.Join(repoGraphs, "scratchpipe.yaml")
	const batches = 60
	common := []string{fmt.Sprintf("dataset.batches=%d", batches), "dataset.eval_batches=0"}
	placed := append([]string{"placement.workers.w1.stages=[plan]", "placement.workers.w2.stages=[exchange]"}, common...)
	far := append([]string{"placement.workers.w1.host=far1", "placement.workers.w2.host=far2"}, placed...)
	perBatch := func(r *results.Results) float64 { return r.WallMs / float64(max(r.Batches+r.EvalBatches, 1)) }
	var one, near, byValue float64
	var edges map[string]results.Edge
	var sendMs, workMs float64
	for i := 0; i < b.N; i++ {
		one += perBatch(runResults(b, graph, setArgs(common)...))
		r, _ := placedRun(b, graph, []string{"w1", "w2"}, placed...)
		near += perBatch(r)
		r, _ = placedRun(b, graph, []string{"w1", "w2"}, far...)
		byValue += perBatch(r)
		edges = map[string]results.Edge{}
		for _, e := range r.Placement.Edges {
			edges[e.Subject] = e
			sendMs += e.SendMs / float64(e.Batches)
		}
		for _, s := range r.Stages {
			workMs += s.WallMs.Mean
		}
	}
	n := float64(b.N)
	b.ReportMetric(one/n, "ms/batch-1proc")
	b.ReportMetric(near/n, "ms/batch-2workers")
	b.ReportMetric(byValue/n, "ms/batch-2workers-byvalue")
	b.ReportMetric(near/one, "x-2workers")
	b.ReportMetric(byValue/one, "x-byvalue")
	// Of the time the stages and their sends took per batch (summed over
	// stages: in a pipeline they overlap), the share spent sending arrays.
	b.ReportMetric(sendMs/(sendMs+workMs), "send-share-byvalue")
	b.ReportMetric(sendMs/n, "send-ms/batch-byvalue")
	for s, e := range edges {
		if e.Batches == 0 {
			continue
		}
		b.ReportMetric(float64(e.Bytes)/float64(e.Batches), "B/batch-"+s)
		b.ReportMetric(float64(e.Messages)/float64(e.Batches), "msgs/batch-"+s)
		b.ReportMetric(e.SendMs/float64(e.Batches), "send-ms/batch-"+s)
	}
}
