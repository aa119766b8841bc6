package rpc

import (
	"context"
	"fmt"
	"math"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/plugin"
	"github.com/flowrun/flowrun/sdk/region"
)

// A blob is an opaque state a plugin hands over or takes back whole (a
// model's state, a cache policy's snapshot). The host accepts one of any
// size; one sent to a plugin travels in its message up to blobInMessage
// and through a shared-memory region beyond it (a plugin's gRPC server
// takes messages of 4 MiB at most).
const blobInMessage = 1 << 20

// GetBlob calls a plugin's blob getter, accepting an answer of any size.
// A plugin without the call (or whose implementation lacks it) answers
// plugin.ErrUnsupported.
func GetBlob[R any](ctx context.Context, call func(context.Context, *pb.Empty, ...grpc.CallOption) (R, error), blob func(R) []byte, what string) ([]byte, error) {
	res, err := call(ctx, &pb.Empty{}, grpc.MaxCallRecvMsgSize(math.MaxInt32))
	if err != nil {
		return nil, unsupported(what, err)
	}
	return blob(res), nil
}

// PutBlob sends blob to a plugin with send, which builds the request from
// the blob itself or, for a large one, a ref to a region holding it (kept
// until the call returns).
func PutBlob(ctx context.Context, blob []byte, name string, send func(context.Context, []byte, *pb.Ref) error, what string) error {
	if len(blob) <= blobInMessage {
		return unsupported(what, send(ctx, blob, nil))
	}
	r, err := region.Create(name, int64(len(blob)))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer r.Close()
	copy(r.Bytes(), blob)
	return unsupported(what, send(ctx, nil, RefToPB(r.Ref())))
}

// TakeBlob is the plugin's half of PutBlob: it hands use the blob, read
// from the message or mapped from the region for the call.
func TakeBlob(inline []byte, ref *pb.Ref, what string, use func([]byte) error) error {
	r := RefFromPB(ref)
	if r.IsZero() {
		return use(inline)
	}
	var m region.Mapper
	defer m.Close()
	b, err := m.Bytes(r)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", plugin.ErrInvalidRequest, what, err)
	}
	return use(b)
}

// unsupported turns "no such call" into plugin.ErrUnsupported, and any
// other status into the error it carries.
func unsupported(what string, err error) error {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unimplemented {
		return fmt.Errorf("%s: %w: %s", what, plugin.ErrUnsupported, st.Message())
	}
	return FromStatus(err)
}
