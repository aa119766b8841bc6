// Package testplugins holds small, correct reference plugins of each kind
// (an LRU cache, a reference kernel, a logistic-regression model, a linear
// device) that the SDK's own tests run the conformance suites against, in
// process and, through the mains under cmd/, as binaries.
//
// They are deliberately plain: their job is to show the suites pass a
// plugin that honours the contract, not to be fast.
package testplugins
