//go:build race

package rpc

// raceBuild: the race detector does not see the lane's hand-off (atomics
// and a futex on memory outside Go's heap) and would report the caller's
// and the handler's accesses as races in a test serving a plugin in
// process, so race builds keep every call on gRPC.
const raceBuild = true
