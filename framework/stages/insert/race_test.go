//go:build race

package insert_test

// raceEnabled is true under the race detector: a run whose plan breaks the
// hold windows races by construction (that is the hazard), so tests that
// run one skip.
const raceEnabled = true
