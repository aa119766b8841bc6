//go:build !race

package insert_test

const raceEnabled = false
