package rpc

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// Kind is one plugin kind's gRPC glue, from which its HostPlugin and
// ServerPlugin are made: a kind package declares one Kind value with its
// generated service's registration and client, instead of repeating the
// go-plugin plumbing.
type Kind[Impl plugin.Base, Client any] struct {
	// Kind names the kind in errors and in the Info the server completes.
	Kind plugin.Kind
	// Register registers the kind's server half on s (see GRPCPlugin).
	Register func(s grpc.ServiceRegistrar, base BaseServer[Impl])
	// NewClient makes the kind's client half (see GRPCPlugin).
	NewClient func(conn *grpc.ClientConn) Client
}

// Host is the plugin a host dispenses clients through; it serves nothing.
func (k Kind[Impl, Client]) Host() goplugin.Plugin {
	var none Impl
	return k.Server(none)
}

// Server is the plugin that serves impl; it dispenses clients too, so that
// tests can put it on both ends of a connection.
func (k Kind[Impl, Client]) Server(impl Impl) goplugin.Plugin {
	return &GRPCPlugin[Impl, Client]{Kind: k.Kind, Impl: impl, Register: k.Register, NewClient: k.NewClient}
}

// Call makes one unary RPC with in and converts its answer with conv, a
// failure into the SDK's sentinel errors (FromStatus): the body of every
// client half's batch call.
func Call[In, Out, R any](ctx context.Context, call func(context.Context, *In, ...grpc.CallOption) (*Out, error), in *In, conv func(*Out) R) (R, error) {
	out, err := call(ctx, in)
	if err != nil {
		var zero R
		return zero, FromStatus(err)
	}
	return conv(out), nil
}

// Answer converts what an implementation returned into an RPC's answer
// with conv, a failure into a status (ToStatus): the end of every server
// half's batch call.
func Answer[R, Out any](res R, err error, conv func(R) Out) (Out, error) {
	if err != nil {
		var zero Out
		return zero, ToStatus(err)
	}
	return conv(res), nil
}

// NewKind builds a kind's glue from its generated service (register, the
// generated RegisterXServer; stub, the generated NewXClient) and its two
// halves, each made around the shared base that answers Info and
// Configure.
func NewKind[Impl plugin.Base, Srv any, Stub baseStub, Client any](kind plugin.Kind,
	register func(grpc.ServiceRegistrar, Srv), stub func(grpc.ClientConnInterface) Stub,
	server func(BaseServer[Impl]) Srv, client func(BaseClient[Stub]) Client) Kind[Impl, Client] {
	return Kind[Impl, Client]{
		Kind:      kind,
		Register:  func(s grpc.ServiceRegistrar, base BaseServer[Impl]) { register(s, server(base)) },
		NewClient: func(conn *grpc.ClientConn) Client { return client(BaseClient[Stub]{Stub: stub(withLane(conn))}) },
	}
}
