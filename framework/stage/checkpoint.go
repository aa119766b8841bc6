package stage

import "context"

// Checkpointer is implemented by a stage that keeps state across batches
// which the run's results need and the engine does not see (the load
// stage's DSF counts, say). The engine calls Checkpoint at a batch
// boundary, when the stage has processed every batch before it and none
// after, and Restore on the resumed run's stage before its first batch.
// A stage without state across batches (whose batches depend only on
// the tables, Storage and plugins the engine saves) needs none.
type Checkpointer interface {
	Checkpoint(ctx context.Context) ([]byte, error)
	Restore(ctx context.Context, state []byte) error
}
