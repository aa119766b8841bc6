package rpc

import (
	"context"
	"errors"
	"fmt"

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
// wraps, if any, and the key of its first plugin.FieldError. The server
// halves return every plugin error through it.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			st := status.New(s.code, err.Error())
			detail := &pb.ErrorDetail{Sentinel: s.wire}
			var fe *plugin.FieldError
			if errors.As(err, &fe) {
				detail.Field, detail.Reason = fe.Key, fmt.Sprint(fe.Err)
			}
			if withDetail, derr := st.WithDetails(detail); derr == nil {
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
	return &remoteError{st: st, sentinel: sentinelOf(st), field: fieldOf(st)}
}

func sentinelOf(st *status.Status) error {
	if detail := errorDetail(st); detail != nil {
		for _, s := range sentinels {
			if s.wire == detail.GetSentinel() {
				return s.err
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

func errorDetail(st *status.Status) *pb.ErrorDetail {
	for _, d := range st.Details() {
		if detail, ok := d.(*pb.ErrorDetail); ok {
			return detail
		}
	}
	return nil
}

// fieldOf rebuilds the plugin's first plugin.FieldError from the status
// detail, nil when it carried none.
func fieldOf(st *status.Status) error {
	detail := errorDetail(st)
	if detail.GetField() == "" {
		return nil
	}
	return &plugin.FieldError{Key: detail.GetField(), Err: errors.New(detail.GetReason())}
}

// remoteError is an error that crossed the plugin boundary. Its text is
// the plugin's; it unwraps to the sentinel and to the plugin's first
// FieldError, so that errors.Is and plugin.FieldOf work on the host.
type remoteError struct {
	st       *status.Status
	sentinel error
	field    error
}

func (e *remoteError) Error() string { return e.st.Message() }

func (e *remoteError) Unwrap() []error {
	var out []error
	for _, err := range []error{e.sentinel, e.field} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// GRPCStatus lets status.FromError and status.Code see the original status
// (codes.Unavailable, for instance, when the plugin process died).
func (e *remoteError) GRPCStatus() *status.Status { return e.st }
