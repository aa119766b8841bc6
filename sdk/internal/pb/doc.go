// Package pb holds the protobuf messages and gRPC stubs of the plugin wire
// protocol, generated from flowrun.proto. Nothing outside sdk/ may see them:
// the kind packages translate them to and from plain Go.
package pb

//go:generate ./scripts/genproto.sh
