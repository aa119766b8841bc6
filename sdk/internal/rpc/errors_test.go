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

// A plugin's FieldError crosses with its key, wrapped or joined, and keeps
// its text; FieldOf finds the first, as it does in process.
func TestFieldErrorSurvivesTheWire(t *testing.T) {
	var errs plugin.FieldErrors
	errs.Add("profile::warmup_batches", "must be ≥ 1, got %d", 0)
	errs.Add("victim", "unknown")
	sent := fmt.Errorf("static: %w", errs.Err())
	got := FromStatus(ToStatus(sent))
	if key, ok := plugin.FieldOf(got); !ok || key != "profile::warmup_batches" {
		t.Errorf("FieldOf = %q, %v after the round trip of %v", key, ok, sent)
	}
	if got.Error() != sent.Error() || !errors.Is(got, plugin.ErrInvalidConfig) {
		t.Errorf("got %q (invalid config %v), want %q", got, errors.Is(got, plugin.ErrInvalidConfig), sent)
	}
	var fe *plugin.FieldError
	if errors.As(got, &fe); fe == nil || fe.Err.Error() != "must be ≥ 1, got 0" {
		t.Errorf("reason %v", fe)
	}
	if _, ok := plugin.FieldOf(FromStatus(ToStatus(plugin.ErrInvalidConfig))); ok {
		t.Error("an error without a FieldError names a key after the round trip")
	}
}
