//go:build !race

package rpc

// raceBuild: see lane_race.go.
const raceBuild = false
