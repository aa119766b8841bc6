// Package placement is the protocol between a run and the flowrun worker
// processes that run some of its stages (the graph's placement section,
// docs/scale-out.md): how a worker finds its run and proves it holds the
// same graph (Join, answered by a Welcome or a refusal), how each side
// knows the other is alive (heartbeats), how the run learns what the
// worker's stages measured (Report) and how both leave (End).
//
// Every message is plain core NATS under flowrun.<run>.placement.…: a
// heartbeat that is lost is superseded by the next one, a completion
// count too (every run heartbeat repeats the latest), and what must not be lost (Join, Report) is a request whose
// caller waits for its answer. Batches do not pass here; they travel on
// the graph's own subjects (framework/bus).
//
// placement imports framework/bus and framework/config; it must not
// import the engine, which drives it.
package placement

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/flowrun/flowrun/framework/config"
)

// Protocol versions the messages below; a worker of another version is
// refused by the digest, which covers it.
const Protocol = "flowrun-placement/1"

// The liveness rules. A worker publishes a heartbeat every Heartbeat; the
// run declares a joined worker gone once it has heard nothing from it
// for placement.silence (config.DefaultPlacementSilence, 750 ms), so a
// killed worker fails the run within that plus one check (Heartbeat/2):
// under a second by default. The run's own heartbeat is given more slack
// (RunSilence): a worker that loses its run only leaves.
const (
	Heartbeat  = 150 * time.Millisecond
	RunSilence = 5 * time.Second
)

// Subject is a placement subject of run id.
func Subject(runID, what string) string { return "flowrun." + runID + ".placement." + what }

// findSubject is where a run answers a worker that knows its graph but
// not its id.
func findSubject(digest string) string { return "flowrun.placement.find." + digest }

// Digest identifies a resolved graph: the sha256 of the protocol and the
// graph as loaded (cfg.Echo: the file's keys with the --set overrides,
// seed and placement included). A run and a worker agree on it only when
// they run the same graph with the same overrides, so the worker's
// stages compute what the run's would.
func Digest(cfg *config.Config) (string, error) {
	echo, err := json.Marshal(cfg.Echo) // map keys sorted: canonical
	if err != nil {
		return "", fmt.Errorf("placement digest: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(Protocol))
	h.Write([]byte{0})
	h.Write(echo)
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// Join is a worker's request to take its stages in a run.
type Join struct {
	Worker string   `json:"worker"`
	Host   string   `json:"host"`
	PID    int      `json:"pid"`
	Stages []string `json:"stages"`
	Digest string   `json:"digest"`
	// Lookahead is what each stage holds back (stage.Lookahead): the run
	// sizes its batch pool with it.
	Lookahead map[string]int `json:"lookahead,omitempty"`
	// Error, when set, is why the worker could not build its stages: the
	// run fails with it.
	Error string `json:"error,omitempty"`
}

// Welcome is the run's answer to a Join.
type Welcome struct {
	// Error, when set, is why the run refused the worker.
	Error string `json:"error,omitempty"`
	// Total is the batches the run's sources make in all.
	Total int `json:"total"`
	// Hosts is the host label of every stage of the graph, for the data
	// plane's choice per edge (by handle or by value).
	Hosts map[string]string `json:"hosts"`
}

// Report is what a worker's stages measured, in the engine's own
// encoding, sent once the run has seen every batch.
type Report struct {
	Measures json.RawMessage `json:"measures,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// Failure is a worker's stage failing mid-run.
type Failure struct {
	Worker string `json:"worker"`
	Error  string `json:"error"`
}

// End is the run's last word: Error is empty when it completed.
type End struct {
	Error string `json:"error,omitempty"`
}

// WorkerError is a worker that failed, or fell silent, during a run.
type WorkerError struct {
	Worker string
	Host   string
	PID    int
	Stages []string
	Err    error
}

func (e *WorkerError) Error() string {
	return fmt.Sprintf("worker %s (pid %d on %s, stages %v): %v", e.Worker, e.PID, e.Host, e.Stages, e.Err)
}

func (e *WorkerError) Unwrap() error { return e.Err }
