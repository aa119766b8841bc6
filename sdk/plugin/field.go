package plugin

import (
	"errors"
	"fmt"
)

// FieldError is a bad option: Key is its path inside the plugin's options,
// "::"-separated for nested keys ("victim", "profile::warmup_batches").
// It wraps ErrInvalidConfig, so errors.Is(err, ErrInvalidConfig) holds, and
// it crosses gRPC with its key, so that a host can point at the option's
// line in the graph without reading the message.
type FieldError struct {
	Key string
	Err error
}

// FieldErrorf returns a *FieldError for key with a formatted reason.
func FieldErrorf(key, format string, args ...any) *FieldError {
	return &FieldError{Key: key, Err: fmt.Errorf(format, args...)}
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s: %v", ErrInvalidConfig, e.Key, e.Err)
}

// Unwrap returns ErrInvalidConfig and the reason.
func (e *FieldError) Unwrap() []error { return []error{ErrInvalidConfig, e.Err} }

// FieldOf returns the key of the first FieldError in err's tree.
func FieldOf(err error) (key string, ok bool) {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Key, true
	}
	return "", false
}
