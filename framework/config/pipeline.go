package config

import "fmt"

// Pipeline is a graph's batch overlap mode.
type Pipeline string

// The pipeline modes.
const (
	// Pipelined lets every stage work on a different batch at once, bounded
	// by the batch pool (one batch per stage plus the bus credits).
	Pipelined Pipeline = "pipelined"
	// Sequential admits the next batch only when the previous one has left
	// every sink.
	Sequential Pipeline = "sequential"
)

// Validate checks the mode.
func (p Pipeline) Validate() error {
	if p != Pipelined && p != Sequential {
		return fmt.Errorf("must be pipelined or sequential, got %q", string(p))
	}
	return nil
}
