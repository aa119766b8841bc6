package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
)

// Decode decodes input (a map from a graph file) over result, a pointer to
// a struct already holding the defaults, with the rules of Load: keys are
// matched by `mapstructure` tag, unknown keys and wrong types are errors,
// numbers are never truncated and a single string is accepted where a list
// of strings is expected. Every problem is returned, joined, each as an
// *Error with the key path relative to input, so a stage factory can
// decode its options with it and hand the result to At.
func Decode(input any, result any) error {
	dc := &mapstructure.DecoderConfig{Result: result}
	strictDecoding(dc)
	dc.ErrorUnused = true
	d, err := mapstructure.NewDecoder(dc)
	if err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	return decodeErrors(d.Decode(input), reflect.TypeOf(result))
}

// strictDecoding sets the decoding rules shared by Load (through viper's
// UnmarshalExact) and Decode. viper's defaults are weakly typed: "20"
// would be accepted as 20 and 1.7 as 1. A graph file is YAML, which types
// its scalars, so a wrong type is a mistake worth reporting.
func strictDecoding(dc *mapstructure.DecoderConfig) {
	dc.WeaklyTypedInput = false
	dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(wholeNumbers, scalarToList)
}

// wholeNumbers rejects floats that do not fit an integer field exactly;
// mapstructure would truncate them.
func wholeNumbers(from reflect.Type, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.Float32 && from.Kind() != reflect.Float64 {
		if isUint(to.Kind()) && isInt(from.Kind()) && reflect.ValueOf(data).Int() < 0 {
			return nil, fmt.Errorf("must be a non-negative integer, got %v", data)
		}
		return data, nil
	}
	if !isInt(to.Kind()) && !isUint(to.Kind()) {
		return data, nil
	}
	f := reflect.ValueOf(data).Float()
	switch {
	case f != math.Trunc(f) || math.IsInf(f, 0):
		return nil, fmt.Errorf("must be a whole number, got %v", data)
	case isUint(to.Kind()) && f < 0:
		return nil, fmt.Errorf("must be a non-negative integer, got %v", data)
	case math.Abs(f) >= 1<<63:
		return nil, fmt.Errorf("%v is too large", data)
	}
	if isUint(to.Kind()) {
		return uint64(f), nil
	}
	return int64(f), nil
}

// scalarToList lets `out: batches` stand for `out: [batches]`. It does not
// split on commas: a subject is one name.
func scalarToList(from reflect.Type, to reflect.Type, data any) (any, error) {
	if from.Kind() == reflect.String && to.Kind() == reflect.Slice && to.Elem().Kind() == reflect.String {
		return []string{data.(string)}, nil
	}
	return data, nil
}

func isInt(k reflect.Kind) bool {
	return k == reflect.Int || k == reflect.Int8 || k == reflect.Int16 || k == reflect.Int32 || k == reflect.Int64
}

func isUint(k reflect.Kind) bool {
	return k == reflect.Uint || k == reflect.Uint8 || k == reflect.Uint16 || k == reflect.Uint32 || k == reflect.Uint64
}

// decodeErrors turns mapstructure's errors into *Error values with key
// paths (`stages::plan::in` rather than `stages[plan].in`) and messages
// that say what is allowed. root is the type decoded into, used to list
// the keys allowed where an unknown one was found.
func decodeErrors(err error, root reflect.Type) error {
	if err == nil {
		return nil
	}
	for root != nil && root.Kind() == reflect.Pointer {
		root = root.Elem()
	}
	var out []error
	var walk func(error)
	walk = func(err error) {
		var de *mapstructure.DecodeError
		switch e := err.(type) {
		case *mapstructure.DecodeError:
			out = append(out, convertDecodeError(e, root)...)
			return
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
			return
		case interface{ Unwrap() error }:
			// mapstructure wraps several errors in "decoding failed due
			// to the following error(s)", which says nothing ours do not.
			if errors.As(err, &de) {
				walk(e.Unwrap())
				return
			}
		}
		out = append(out, err)
	}
	walk(err)
	return errors.Join(out...)
}

func convertDecodeError(e *mapstructure.DecodeError, root reflect.Type) []error {
	path := namePath(e.Name(), root)
	inner := e.Unwrap()
	if keys, ok := strings.CutPrefix(inner.Error(), "has invalid keys: "); ok {
		allowed := allowedKeys(root, path)
		var out []error
		for _, k := range strings.Split(keys, ", ") {
			out = append(out, &Error{Path: joinPath(path, strings.ToLower(k)),
				Err: fmt.Errorf("%w %q (allowed%s: %s)", ErrUnknownKey, k, under(path), allowed)})
		}
		return out
	}
	var ute *mapstructure.UnconvertibleTypeError
	var pe *mapstructure.ParseError
	switch {
	case errors.As(inner, &ute):
		inner = fmt.Errorf("must be %s, got %s", describeType(ute.Expected.Type()), describeValue(ute.Value))
	case errors.As(inner, &pe):
		inner = fmt.Errorf("must be %s: %w", describeType(pe.Expected.Type()), pe.Err)
	}
	return []error{&Error{Path: path, Err: inner}}
}

// namePath converts mapstructure's field name (`stages[plan].out[1]`) to a
// key path (`stages::plan::out::1`). At the root mapstructure names the
// Go type instead, which is no key at all.
func namePath(name string, root reflect.Type) string {
	if root != nil && name == root.String() {
		return ""
	}
	var segs []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			segs = append(segs, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '.':
			flush()
		case '[':
			flush()
			j := strings.IndexByte(name[i+1:], ']')
			if j < 0 {
				cur.WriteString(name[i+1:])
				i = len(name)
				break
			}
			segs = append(segs, name[i+1:i+1+j])
			i += j + 1
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return strings.Join(segs, KeyDelimiter)
}

// schemaAt returns the Go type that the key path decodes into within root.
// A path below a free-form map (a stage's options, a plugin's options)
// returns the empty interface type: any key is allowed there.
func schemaAt(root reflect.Type, segs []string) (reflect.Type, error) {
	t := root
	for i, seg := range segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		here := strings.Join(segs[:i], ".")
		switch t.Kind() {
		case reflect.Struct:
			f, remain, ok := fieldByKey(t, seg)
			switch {
			case ok:
				t = f.Type
			case remain:
				return reflect.TypeFor[any](), nil
			default:
				return nil, fmt.Errorf("%w %q (allowed%s: %s)", ErrUnknownKey, seg, under(here), strings.Join(structKeys(t), ", "))
			}
		case reflect.Map:
			t = t.Elem()
		case reflect.Interface:
			return t, nil
		case reflect.Slice, reflect.Array:
			return nil, fmt.Errorf("%s is a list: set it whole, e.g. %s=[a,b]", here, here)
		default:
			return nil, fmt.Errorf("%s is %s and has no key %q", here, describeType(t), seg)
		}
	}
	return t, nil
}

func under(path string) string {
	if path == "" {
		return ""
	}
	return " under " + path
}

// allowedKeys lists the keys of the struct at path, for "unknown key"
// messages.
func allowedKeys(root reflect.Type, path string) string {
	var segs []string
	if path != "" {
		segs = strings.Split(path, KeyDelimiter)
	}
	if root == nil {
		return "see docs/graph-reference.md"
	}
	t, err := schemaAt(root, segs)
	if err != nil {
		return "see docs/graph-reference.md"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "see docs/graph-reference.md"
	}
	keys := structKeys(t)
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// fieldByKey finds the field tagged key; remain reports whether the struct
// collects unknown keys in a `,remain` field instead.
func fieldByKey(t reflect.Type, key string) (f reflect.StructField, remain, ok bool) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("mapstructure"), ",")
		if strings.Contains(opts, "remain") {
			remain = true
			continue
		}
		if name == "" || name == "-" || !sf.IsExported() {
			continue
		}
		if strings.EqualFold(name, key) {
			return sf, false, true
		}
	}
	return reflect.StructField{}, remain, false
}

func structKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("mapstructure"), ",")
		if name != "" && name != "-" && sf.IsExported() {
			keys = append(keys, name)
		}
	}
	sort.Strings(keys)
	return keys
}

func describeType(t reflect.Type) string {
	switch k := t.Kind(); {
	case isInt(k):
		return "an integer"
	case isUint(k):
		return "a non-negative integer"
	case k == reflect.Float32 || k == reflect.Float64:
		return "a number"
	case k == reflect.String:
		return "a string"
	case k == reflect.Bool:
		return "true or false"
	case k == reflect.Slice || k == reflect.Array:
		return "a list"
	case k == reflect.Map || k == reflect.Struct:
		return "a mapping"
	}
	return t.String()
}

func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing"
	case string:
		return "the string " + strconv.Quote(x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case int, int64, int32, uint, uint64, uint32:
		return fmt.Sprintf("the integer %v", x)
	case float64, float32:
		return fmt.Sprintf("the number %v", x)
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}
