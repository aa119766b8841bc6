package rpc

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// sentinels pairs each sdk/plugin sentinel with its wire name and the gRPC
// code that carries it. Invalid config and invalid request share a code; the
// ErrorDetail tells them apart.
var sentinels = []struct {
	err  error
	wire pb.Sentinel
	code codes.Code
}{
	{plugin.ErrInvalidConfig, pb.Sentinel_SENTINEL_INVALID_CONFIG, codes.InvalidArgument},
	{plugin.ErrNotConfigured, pb.Sentinel_SENTINEL_NOT_CONFIGURED, codes.FailedPrecondition},
	{plugin.ErrInvalidRequest, pb.Sentinel_SENTINEL_INVALID_REQUEST, codes.InvalidArgument},
	{plugin.ErrUnsupported, pb.Sentinel_SENTINEL_UNSUPPORTED, codes.Unimplemented},
}

// ToStatus turns an error a plugin returned into a gRPC status error whose
// message is err's text and whose code (and detail) names the sentinel err
// wraps, if any. The server halves return every plugin error through it.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			st := status.New(s.code, err.Error())
			if withDetail, derr := st.WithDetails(&pb.ErrorDetail{Sentinel: s.wire}); derr == nil {
				st = withDetail
			}
			return st.Err()
		}
	}
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		// Already a status: an error from a call this plugin made to
		// another one, passing through.
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

// FromStatus turns an error from a gRPC call back into plain Go: the error
// keeps the plugin's message text, errors.Is matches the sentinel the plugin
// returned, and the gRPC status stays reachable through status.FromError.
// The client halves return every call error through it.
func FromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return &remoteError{st: st, sentinel: sentinelOf(st)}
}

func sentinelOf(st *status.Status) error {
	for _, d := range st.Details() {
		if detail, ok := d.(*pb.ErrorDetail); ok {
			for _, s := range sentinels {
				if s.wire == detail.GetSentinel() {
					return s.err
				}
			}
		}
	}
	// No detail: a plugin built without this SDK, or a call the server does
	// not implement at all (a binary of another kind answers Unimplemented).
	switch st.Code() {
	case codes.InvalidArgument:
		return plugin.ErrInvalidRequest
	case codes.FailedPrecondition:
		return plugin.ErrNotConfigured
	case codes.Unimplemented:
		return plugin.ErrUnsupported
	case codes.Canceled:
		return context.Canceled
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	}
	return nil
}

// remoteError is an error that crossed the plugin boundary.
type remoteError struct {
	st       *status.Status
	sentinel error
}

func (e *remoteError) Error() string { return e.st.Message() }

func (e *remoteError) Unwrap() error { return e.sentinel }

// GRPCStatus lets status.FromError and status.Code see the original status
// (codes.Unavailable, for instance, when the plugin process died).
func (e *remoteError) GRPCStatus() *status.Status { return e.st }
