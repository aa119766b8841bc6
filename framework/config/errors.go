package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// KeyDelimiter separates the keys of a path in errors and in Source:
// `stages::plan::window::past`. It is not "." because stage names, subject
// names and option keys may contain dots.
const KeyDelimiter = "::"

// ErrUnknownKey is wrapped by every error about a key the schema does not
// have, so a caller can tell a typo from a bad value with errors.Is.
var ErrUnknownKey = errors.New("unknown key")

// Error is one problem in a graph, located by file, line and key path.
//
// Error() reads `FILE:LINE: PATH: message`; `:LINE` is left out when the
// line is unknown (0), and FILE or PATH when they are empty.
type Error struct {
	// File is the graph file (or empty when the config was built in code).
	File string
	// Line is the 1-based line of the key in File, 0 when unknown.
	Line int
	// Path is the key path, keys joined by KeyDelimiter.
	Path string
	// Err is what is wrong.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("invalid")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// At places err at the relative key path under the caller's position. It
// nests: a stage factory returns At("window::past", err) and the graph
// package wraps that in At("stages::plan", ...), giving
// `stages::plan::window::past`. A joined error is distributed, so that
// every error in it gets its own path. Errors already located in a file
// are returned unchanged.
//
// Wrap with At rather than fmt.Errorf("...: %w") to keep the path: a path
// error inside another error's message is no longer a path error.
func At(path string, err error) error {
	if err == nil {
		return nil
	}
	if path == "" {
		return err
	}
	if errs, ok := joined(err); ok {
		out := make([]error, 0, len(errs))
		for _, e := range errs {
			out = append(out, At(path, e))
		}
		return errors.Join(out...)
	}
	if e, ok := err.(*Error); ok {
		if e.File != "" {
			return err
		}
		return &Error{Path: joinPath(path, e.Path), Err: e.Err}
	}
	return &Error{Path: path, Err: err}
}

// Errors flattens an error tree built with errors.Join and At into its
// located errors, in order. An error without a path becomes an *Error with
// only Err set. It returns nil for a nil error.
func Errors(err error) []*Error {
	if err == nil {
		return nil
	}
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if errs, ok := joined(err); ok {
			for _, e := range errs {
				walk(e)
			}
			return
		}
		if e, ok := err.(*Error); ok {
			out = append(out, e)
			return
		}
		out = append(out, &Error{Err: err})
	}
	walk(err)
	return out
}

// Annotate turns every error in a joined error tree into an *Error that
// carries the file and the line of its path, and returns them joined,
// sorted by line so that they read in file order (errors without a line,
// about the graph as a whole, come first). Errors whose value was given by
// a `--set` flag point at the flag instead of the file's line. A nil
// Source annotates nothing but still flattens.
func (s *Source) Annotate(err error) error {
	if err == nil {
		return nil
	}
	errs := Errors(err)
	out := make([]*Error, 0, len(errs))
	for _, e := range errs {
		if e.File != "" || s == nil {
			out = append(out, e)
			continue
		}
		a := &Error{File: s.File, Path: e.Path, Err: e.Err}
		if set, ok := s.setFor(e.Path); ok {
			a.Err = fmt.Errorf("%w (from --set %s)", e.Err, set)
		} else {
			a.Line = s.Line(e.Path)
		}
		out = append(out, a)
	}
	return joinInFileOrder(out)
}

// joinInFileOrder joins errs sorted by line, those without one first.
func joinInFileOrder(errs []*Error) error {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	joinedErrs := make([]error, len(errs))
	for i, e := range errs {
		joinedErrs[i] = e
	}
	return errors.Join(joinedErrs...)
}

// Merge joins the located errors of a later check (later) to those of an
// earlier one (err), in file order, leaving out each later error about a
// key that an earlier error is about, or a key above or below it: a check
// run on a config with errors trips over the values already refused, and
// one line per key is enough. Either may be nil.
func Merge(err, later error) error {
	first := Errors(err)
	out := append([]*Error(nil), first...)
	for _, e := range Errors(later) {
		if !coveredBy(e, first) {
			out = append(out, e)
		}
	}
	return joinInFileOrder(out)
}

// coveredBy reports whether one of errs is about e's key, or a key above
// or below it.
func coveredBy(e *Error, errs []*Error) bool {
	if e.Path == "" {
		return false
	}
	p := strings.ToLower(e.Path)
	for _, f := range errs {
		q := strings.ToLower(f.Path)
		if q == "" {
			continue
		}
		if p == q || strings.HasPrefix(p, q+KeyDelimiter) || strings.HasPrefix(q, p+KeyDelimiter) {
			return true
		}
	}
	return false
}

// joined reports the errors of an errors.Join. Other errors with several
// wrapped errors (fmt.Errorf with two %w) keep their own message, so they
// are recognised by it being exactly the joined messages.
func joined(err error) ([]error, bool) {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil, false
	}
	errs := j.Unwrap()
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	if strings.Join(msgs, "\n") != err.Error() {
		return nil, false
	}
	return errs, true
}

func joinPath(parts ...string) string {
	var nonEmpty []string
	for _, p := range parts {
		if p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	return strings.Join(nonEmpty, KeyDelimiter)
}
