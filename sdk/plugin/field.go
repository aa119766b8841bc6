package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
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

// FieldErrors collects a Validate's bad options, so that it reports all of
// them at once (errors.Join), each a *FieldError where one key is at fault.
type FieldErrors []error

// Add records a bad option at key.
func (e *FieldErrors) Add(key, format string, args ...any) {
	*e = append(*e, FieldErrorf(key, format, args...))
}

// Err joins the errors collected, nil when there are none.
func (e FieldErrors) Err() error { return errors.Join(e...) }

// unknownField is how encoding/json names a key its destination lacks; it
// has no error type for it.
const unknownField = `json: unknown field "`

// decodeError turns a DecodeOptions error into a *FieldError where json
// names the key, else an error wrapping ErrInvalidConfig.
func decodeError(err error, dst any) error {
	var te *json.UnmarshalTypeError
	switch msg := err.Error(); {
	case errors.As(err, &te) && te.Field != "":
		return FieldErrorf(jsonKey(reflect.TypeOf(dst), te.Field), "cannot use %s as %s", te.Value, te.Type)
	case strings.HasPrefix(msg, unknownField) && strings.HasSuffix(msg, `"`):
		return FieldErrorf(strings.TrimSuffix(strings.TrimPrefix(msg, unknownField), `"`), "unknown field")
	}
	return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
}

// jsonKey turns json's dotted field path (which names an embedded struct
// by its Go name, "Options.capacity") into the option's key path, "::"
// separated, leaving out embedded structs, whose fields json inlines.
func jsonKey(t reflect.Type, field string) string {
	var key []string
	for part := range strings.SplitSeq(field, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			key, t = append(key, part), nil
			continue
		}
		if f, ok := t.FieldByName(part); ok && f.Anonymous && f.Tag.Get("json") == "" {
			t = f.Type // inlined: not part of the key
			continue
		}
		key, t = append(key, part), fieldType(t, part)
	}
	return strings.Join(key, "::")
}

// fieldType is the type of struct t's field whose json name is name, nil
// when there is none.
func fieldType(t reflect.Type, name string) reflect.Type {
	for _, f := range reflect.VisibleFields(t) {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name || (tag == "" && strings.EqualFold(f.Name, name)) {
			return f.Type
		}
	}
	return nil
}
