package results

// Placement is where a placed run's stages ran (docs/scale-out.md).
type Placement struct {
	// Host is the run's host label.
	Host    string                  `json:"host"`
	Workers map[string]PlacedWorker `json:"workers"`
	// Edges are the graph's subjects between two processes.
	Edges []Edge `json:"edges"`
}

// PlacedWorker is one worker process of a run.
type PlacedWorker struct {
	Host   string   `json:"host"`
	PID    int      `json:"pid"`
	Stages []string `json:"stages"`
}

// Edge is one graph subject between stages in different processes: its
// batch headers cross NATS; by value, the batch's arrays too, in chunks
// of at most the server's max_payload. Measured.
type Edge struct {
	Subject string `json:"subject"`
	From    string `json:"from"`
	To      string `json:"to"`
	ByValue bool   `json:"by_value"`
	// Batches, Bytes and Messages count what crossed by value (arrays
	// only; every batch's header is one more message of a few hundred
	// bytes).
	Batches  int64 `json:"batches,omitempty"`
	Bytes    int64 `json:"bytes,omitempty"`
	Messages int64 `json:"messages,omitempty"`
	// SendMs is the wall time the producer spent sending them.
	SendMs float64 `json:"send_ms,omitempty"`
}
