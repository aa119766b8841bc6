package rpc

import (
	"testing"

	"google.golang.org/grpc"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// A host's plugin has no implementation; asked to serve, it says so and
// registers nothing.
func TestGRPCServerWithoutImpl(t *testing.T) {
	p := &GRPCPlugin[plugin.Base, any]{
		Kind: plugin.KindCache,
		Register: func(grpc.ServiceRegistrar, BaseServer[plugin.Base]) {
			t.Error("Register called without an implementation")
		},
	}
	err := p.GRPCServer(nil, grpc.NewServer())
	if err == nil || err.Error() != "cache: no implementation to serve" {
		t.Fatalf("GRPCServer without Impl: err = %v", err)
	}
}
