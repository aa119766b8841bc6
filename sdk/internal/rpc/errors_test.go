package rpc

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowrun/flowrun/sdk/plugin"
)

func TestSentinelsSurviveTheWire(t *testing.T) {
	for _, sentinel := range []error{
		plugin.ErrInvalidConfig,
		plugin.ErrNotConfigured,
		plugin.ErrInvalidRequest,
		plugin.ErrUnsupported,
		context.Canceled,
		context.DeadlineExceeded,
	} {
		sent := fmt.Errorf("lru: table 3: %w", sentinel)
		got := FromStatus(ToStatus(sent))
		if !errors.Is(got, sentinel) {
			t.Errorf("%v: errors.Is(%v) = false after the round trip", sentinel, got)
		}
		if got.Error() != sent.Error() {
			t.Errorf("%v: message %q, want %q", sentinel, got.Error(), sent.Error())
		}
		for _, other := range sentinels {
			if other.err != sentinel && errors.Is(got, other.err) {
				t.Errorf("%v: also matches %v", sentinel, other.err)
			}
		}
	}
}

func TestPlainErrorsStayPlain(t *testing.T) {
	got := FromStatus(ToStatus(errors.New("disk on fire")))
	if got.Error() != "disk on fire" {
		t.Errorf("message %q", got.Error())
	}
	for _, s := range sentinels {
		if errors.Is(got, s.err) {
			t.Errorf("plain error matches %v", s.err)
		}
	}
	if status.Code(got) != codes.Unknown {
		t.Errorf("code %v, want Unknown", status.Code(got))
	}
}

// A server that never heard of the SDK's detail (or a binary serving another
// kind, answering Unimplemented) still maps to the nearest sentinel.
func TestBareStatusCodes(t *testing.T) {
	cases := map[codes.Code]error{
		codes.Unimplemented:      plugin.ErrUnsupported,
		codes.FailedPrecondition: plugin.ErrNotConfigured,
		codes.InvalidArgument:    plugin.ErrInvalidRequest,
	}
	for code, want := range cases {
		if got := FromStatus(status.Error(code, "x")); !errors.Is(got, want) {
			t.Errorf("%v: got %v, want %v", code, got, want)
		}
	}
	if got := FromStatus(status.Error(codes.Unavailable, "gone")); status.Code(got) != codes.Unavailable {
		t.Errorf("Unavailable lost: %v", got)
	}
}

func TestNil(t *testing.T) {
	if ToStatus(nil) != nil || FromStatus(nil) != nil {
		t.Fatal("nil error not kept nil")
	}
}
