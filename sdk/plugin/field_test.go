package plugin

import (
	"encoding/json"
	"errors"
	"testing"
)

type inlined struct {
	Capacity int64 `json:"capacity"`
}

type options struct {
	inlined
	Past   *int `json:"past_window"`
	Nested struct {
		Warmup int `json:"warmup_batches"`
	} `json:"profile"`
}

// DecodeOptions names the key of an unknown option and of a value of the
// wrong type, nested or inlined, and keeps the "config error: KEY: reason"
// shape of the message.
func TestDecodeOptionsFieldError(t *testing.T) {
	for _, c := range []struct{ raw, key, msg string }{
		{`{"capacity": "a"}`, "capacity", "invalid plugin configuration: capacity: cannot use string as int64"},
		{`{"capacity": 1.5}`, "capacity", "invalid plugin configuration: capacity: cannot use number 1.5 as int64"},
		{`{"past_window": true}`, "past_window", "invalid plugin configuration: past_window: cannot use bool as int"},
		{`{"profile": {"warmup_batches": "x"}}`, "profile::warmup_batches", "invalid plugin configuration: profile::warmup_batches: cannot use string as int"},
		{`{"colour": 1}`, "colour", "invalid plugin configuration: colour: unknown field"},
	} {
		var o options
		err := DecodeOptions(json.RawMessage(c.raw), &o)
		key, ok := FieldOf(err)
		if !ok || key != c.key || err.Error() != c.msg || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v (key %q, %v), want key %q, %q", c.raw, err, key, ok, c.key, c.msg)
		}
	}
	var o options
	if err := DecodeOptions(json.RawMessage(`[1]`), &o); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("an array: %v, want ErrInvalidConfig", err)
	} else if _, ok := FieldOf(err); ok {
		t.Errorf("an array: %v names a key", err)
	}
}

// FieldErrors joins every bad option; FieldOf finds the first.
func TestFieldErrors(t *testing.T) {
	var errs FieldErrors
	if errs.Err() != nil {
		t.Fatal("no errors, but Err is not nil")
	}
	errs.Add("capacity", "must be ≥ %d", 1)
	errs.Add("victim", "unknown")
	err := errs.Err()
	if key, _ := FieldOf(err); key != "capacity" || !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("%v: key %q", err, key)
	}
	if want := "invalid plugin configuration: capacity: must be ≥ 1\ninvalid plugin configuration: victim: unknown"; err.Error() != want {
		t.Fatalf("%q, want %q", err, want)
	}
}
