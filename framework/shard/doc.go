// Package shard owns sharded host tables: table-shard services, each the
// owner of a partition of every table's rows (their values and optimizer
// state, in its own batch.Tables), and the client the running process
// stages rows through (a batch.Remote). Rows are partitioned row-wise by
// Owner; a shard initialises a row on its first fetch from (seed, table,
// row) exactly as an unsharded table does, so where a row lives changes
// no value and no digest.
//
// Every exchange is NATS request-reply on the subject
// flowrun.<run>.shard.<index>, batched per batch and per shard (never per
// row) and chunked under the server's max_payload. A shard that does not
// answer within the client's timeout fails the call naming it.
//
// It imports framework/batch (the tables) and the NATS client; it must
// not import the engine, the graph or any stage kind.
package shard
