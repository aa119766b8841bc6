package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Source remembers where each key of a graph file is, so that errors found
// after decoding (by Validate, the graph builder, stage factories) can name
// the line. viper keeps no positions, hence this second parse with yaml.v3.
//
// Keys are compared without case, like viper does.
type Source struct {
	// File is the graph file's path as given to Load.
	File string
	// lines maps a lower-cased key path (sequence items by index) to the
	// line of its key.
	lines map[string]int
	// visits counts nodes walked, against maxVisits.
	visits int
	// sets maps a key path given with --set to the flag's argument.
	sets map[string]string
}

// Line returns the line of the key at path, or of its nearest ancestor in
// the file when the key itself is not there (a default, or a key given
// only with --set); 0 when no ancestor is in the file either.
func (s *Source) Line(path string) int {
	if s == nil {
		return 0
	}
	l, _ := nearest(s.lines, path)
	return l
}

// setFor returns the --set argument that gave the value at path, or that of
// an ancestor of path.
func (s *Source) setFor(path string) (string, bool) {
	return nearest(s.sets, path)
}

// nearest looks path up in m, without case, and then each of its
// ancestors in turn, nearest first.
func nearest[V any](m map[string]V, path string) (V, bool) {
	p := strings.ToLower(path)
	for p != "" {
		if v, ok := m[p]; ok {
			return v, true
		}
		i := strings.LastIndex(p, KeyDelimiter)
		if i < 0 {
			break
		}
		p = p[:i]
	}
	var zero V
	return zero, false
}

// maxDepth and maxVisits bound the walk of a YAML tree. Merge keys are
// followed into their anchors, and anchors that merge anchors that merge
// ... grow exponentially (the "billion laughs"); no graph needs anywhere
// near these bounds, and past them only line numbers are lost.
const (
	maxDepth  = 64
	maxVisits = 100000
)

// parseSource parses data with yaml.v3 and records the line of every key.
// It reports syntax errors with their line, a document that is not a
// mapping, and keys repeated in one mapping, also those differing only in
// case (viper would silently keep one of them).
func parseSource(file string, data []byte) (*Source, error) {
	s := &Source{File: file, lines: map[string]int{}, sets: map[string]string{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return s, yamlError(file, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return s, nil // an empty file: all defaults
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			return s, nil
		}
		return s, &Error{File: file, Line: root.Line,
			Err: fmt.Errorf("a graph file is a mapping of keys (seed, dataset, stages, ...), got %s", nodeKind(root))}
	}
	var errs []error
	s.walk(root, "", 0, &errs)
	return s, errors.Join(errs...)
}

func (s *Source) walk(n *yaml.Node, path string, depth int, errs *[]error) {
	s.visits++
	if depth > maxDepth || s.visits > maxVisits {
		return
	}
	// A plain alias (`*name`) is not followed: the keys under it are on
	// the anchor's lines, where errors about them are better placed
	// anyway, and following aliases is what makes YAML bombs explode.
	switch n.Kind {
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := joinPath(path, strconv.Itoa(i))
			s.setLine(p, item.Line)
			s.walk(item, p, depth+1, errs)
		}
	case yaml.MappingNode:
		type seenKey struct {
			key  string
			line int
		}
		seen := map[string]seenKey{}
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				merges = append(merges, v)
				continue
			}
			lower := strings.ToLower(k.Value)
			p := joinPath(path, lower)
			if first, ok := seen[lower]; ok {
				var err error
				if first.key == k.Value {
					err = fmt.Errorf("duplicate key %q (first at line %d)", k.Value, first.line)
				} else {
					err = fmt.Errorf("key %q differs only in case from %q at line %d; keys are case-insensitive",
						k.Value, first.key, first.line)
				}
				*errs = append(*errs, &Error{File: s.File, Line: k.Line, Path: p, Err: err})
				continue
			}
			seen[lower] = seenKey{k.Value, k.Line}
			s.lines[p] = k.Line
			s.walk(v, p, depth+1, errs)
		}
		// Merged mappings (`<<: *defaults`) come last so that the keys
		// written here win, as they do in the decoded value.
		for _, m := range merges {
			s.walkMerge(m, path, depth+1, errs)
		}
	}
}

// walkMerge records the keys of a merged mapping (or sequence of them)
// where the mapping that merges them has not set them itself.
func (s *Source) walkMerge(n *yaml.Node, path string, depth int, errs *[]error) {
	s.visits++
	if depth > maxDepth || s.visits > maxVisits {
		return
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias != nil {
			s.walkMerge(n.Alias, path, depth+1, errs)
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			s.walkMerge(item, path, depth+1, errs)
		}
	case yaml.MappingNode:
		sub := &Source{File: s.File, lines: map[string]int{}, visits: s.visits}
		var ignored []error // duplicates inside an anchor are reported where it is defined
		sub.walk(n, path, depth, &ignored)
		s.visits = sub.visits
		for p, l := range sub.lines {
			s.setLine(p, l)
		}
	}
}

func (s *Source) setLine(path string, line int) {
	if _, ok := s.lines[path]; !ok {
		s.lines[path] = line
	}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns a yaml.v3 syntax error into an *Error with its line.
func yamlError(file string, err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Err: fmt.Errorf("invalid YAML: %s", m[2])}
	}
	return &Error{File: file, Err: fmt.Errorf("invalid YAML: %w", err)}
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		return fmt.Sprintf("the scalar %q", n.Value)
	}
	return "something else"
}
