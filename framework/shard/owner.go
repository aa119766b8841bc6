package shard

import (
	"strconv"

	"github.com/flowrun/flowrun/framework/batch"
)

// Owner is the shard, of n, that owns row of table:
//
//	SplitMix64(row ⊕ (table+1)·0x9e3779b97f4a7c15) mod n
//
// (batch.SplitMix64). A hash spreads a table's hot rows, which a skewed
// (Zipf) access pattern puts anywhere in the ID space, evenly over the
// shards; the table is in the key so that the tables' row 0s do not all
// land on one shard.
func Owner(table int, row int64, n int) int {
	if n <= 1 {
		return 0
	}
	return int(batch.SplitMix64(uint64(row)^uint64(table+1)*0x9e3779b97f4a7c15) % uint64(n))
}

// Subject is the NATS subject shard index of run listens on.
func Subject(run string, index int) string {
	return "flowrun." + run + ".shard." + strconv.Itoa(index)
}
