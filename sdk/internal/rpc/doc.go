// Package rpc is the plumbing every plugin kind's gRPC halves share: the
// go-plugin glue (GRPCPlugin), the Info and Configure halves of every
// service (BaseClient, BaseServer), converting the SDK's base types
// (region.Ref, plugin.Setup, plugin.Info) to and from their protobuf
// messages, carrying sdk/plugin's sentinel errors across gRPC as status
// codes, serving a plugin binary (including its "describe" answer), and
// the lane (lane.go): a shared-memory, futex-woken path that carries a
// connection's unary calls instead of gRPC where it can.
//
// It is internal to sdk/: plugin authors and the framework see only the kind
// packages' plain Go API. It must never import framework/.
package rpc
