package shard

import "strconv"

// Owner is the shard, of n, that owns row of table: row mod n. Shard i
// stores row r as its local row r / n (batch.NewPartTables), so each
// shard's tables, their index included, are 1/n of the whole (a hash
// would spread rows as well, but every shard would then pay the whole
// table's index). Rows looked up together spread: the synthetic data
// places popularity ranks by an affine permutation, (rank·mul + add) mod
// rows, which mod n deals out in turn when n divides the rows, and hashed
// IDs (Criteo's) are uniform already.
func Owner(table int, row int64, n int) int {
	if n <= 1 {
		return 0
	}
	return int(row % int64(n))
}

// Subject is the NATS subject shard index of run listens on.
func Subject(run string, index int) string {
	return "flowrun." + run + ".shard." + strconv.Itoa(index)
}
