package rpc

import (
	"context"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// GRPCPlugin is the go-plugin glue for one plugin kind, gRPC only. A host's
// plugin has no Impl and only dispenses clients; a plugin binary's serves
// Impl and can dispense clients too, so tests can put it on both ends of a
// connection. Each kind's HostPlugin and ServerPlugin return one.
type GRPCPlugin[Impl plugin.Base, Client any] struct {
	goplugin.NetRPCUnsupportedPlugin

	// Kind names the kind in errors and in the Info the server completes.
	Kind plugin.Kind
	// Impl is the implementation GRPCServer serves; nil in a host.
	Impl Impl
	// Register registers the kind's server half on s; base holds Impl and
	// answers Info and Configure.
	Register func(s grpc.ServiceRegistrar, base BaseServer[Impl])
	// NewClient makes the kind's client half, whose calls are RPCs on conn.
	NewClient func(conn *grpc.ClientConn) Client
}

// GRPCServer implements goplugin.GRPCPlugin.
func (p *GRPCPlugin[Impl, Client]) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if any(p.Impl) == nil {
		return fmt.Errorf("%s: no implementation to serve", p.Kind)
	}
	lanes := newLaneRecorder(s)
	p.Register(lanes, BaseServer[Impl]{Impl: p.Impl, Kind: p.Kind})
	lanes.serveLanes()
	return nil
}

// GRPCClient implements goplugin.GRPCPlugin.
func (p *GRPCPlugin[Impl, Client]) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return p.NewClient(conn), nil
}
