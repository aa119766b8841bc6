package kernel

import (
	"math/bits"
	"slices"
)

// sortDigit is SortByRow's radix digit: 11 bits, so that 2²² rows take two
// passes.
const sortDigit = 11

// SortByRow sorts keys, each row<<32 | position (position < 2³², row in
// [0, maxRow] and maxRow < 2³²), stably by row: an LSD radix sort over the
// row bits in 11-bit digits, so that 2²² rows take two passes. Small inputs
// use a comparison sort, which gives the same order since keys that compare
// equal are equal. tmp must be as long as keys. It returns the sorted
// slice, which is keys or tmp.
//
// It is the sort of expand-coalesce (Tensor Casting Alg. 1) and of casting
// (Alg. 2, Step 1): kernels sort a batch's (row, bag) keys with it, and the
// cast stage its (row, lookup) keys.
func SortByRow(keys, tmp []uint64, maxRow int64) []uint64 {
	if len(keys) < 512 {
		slices.Sort(keys)
		return keys
	}
	var count [1 << sortDigit]int
	for shift := 32; shift < 32+bits.Len64(uint64(maxRow)); shift += sortDigit {
		clear(count[:])
		for _, k := range keys {
			count[k>>shift&(1<<sortDigit-1)]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, k := range keys {
			d := k >> shift & (1<<sortDigit - 1)
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// SortPasses is how many radix passes SortByRow makes over keys of rows in
// [0, rows): at least one, for what the cost models charge a sort by row.
func SortPasses(rows int64) int {
	return max(1, (bits.Len64(uint64(rows-1))+sortDigit-1)/sortDigit)
}
