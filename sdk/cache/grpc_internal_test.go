package cache

import (
	"context"
	"reflect"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/internal/rpc"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// oldStub is the client stub of a plugin built before the Needs call
// existed: its server answers Unimplemented.
type oldStub struct{ pb.CacheClient }

func (oldStub) Needs(context.Context, *pb.ConfigureRequest, ...grpc.CallOption) (*pb.CacheNeeds, error) {
	return nil, status.Error(codes.Unimplemented, "method Needs not implemented")
}

func TestNeedsOfAnOldPluginIsZero(t *testing.T) {
	c := &client{rpc.BaseClient[pb.CacheClient]{Stub: oldStub{}}}
	n, err := c.Needs(context.Background(), plugin.Setup{})
	if err != nil || !reflect.DeepEqual(n, Needs{}) {
		t.Fatalf("Needs of a plugin answering Unimplemented = %+v, %v; want the zero Needs", n, err)
	}
}
