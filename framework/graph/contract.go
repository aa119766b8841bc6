package graph

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/flowrun/flowrun/framework/batch"
)

// FieldKinds is what a Kinds may also do (stage.Registry does): say which
// batch fields (arrays and stats) a stage of a kind, with its decoded
// options, produces and consumes. With it, Build refuses a graph in which a
// stage consumes a field that no stage upstream produces, before anything
// runs, and the Graph lists the fields its batch layout must hold
// (Graph.Fields).
type FieldKinds interface {
	Fields(kind string, options any) (produces, consumes []batch.Field)
}

// declared is one stage's fields.
type declared struct {
	produces, consumes []batch.Field
}

// checkContract asks each stage for its fields and checks that every field
// a stage consumes is produced by the stage itself or by a stage upstream
// of it: one it reaches through subjects that are not feedback, since a
// batch's arrays and stats travel down the graph with it. It runs on a
// graph that has passed every check before it (subjects, cycles), where
// upstream means something; on any other it only records the fields.
func (b *builder) checkContract() {
	fk, ok := b.kinds.(FieldKinds)
	if !ok {
		return
	}
	b.fields = make(map[string]declared, len(b.names))
	for _, name := range b.names {
		opts, ok := b.options[name]
		if !ok {
			continue // its options were refused
		}
		p, c := fk.Fields(b.cfg.Stages[name].Kind, opts)
		b.fields[name] = declared{produces: p, consumes: c}
	}
	if len(b.errs) > 0 {
		return
	}
	pred, succ := b.edges()
	for _, name := range b.names {
		up, down := reach(name, pred), reach(name, succ)
		up[name] = true
		for _, f := range b.fields[name].consumes {
			if len(b.producersOf(f, func(s string) bool { return up[s] })) > 0 {
				continue
			}
			b.fail(b.contractPath(name), b.missingProducer(name, f, down))
		}
	}
}

// missingProducer is the error for stage name consuming f, which no stage
// upstream produces; it names the stages that produce f elsewhere, those
// downstream of name (too late) and those on another branch.
func (b *builder) missingProducer(name string, f batch.Field, down map[string]bool) error {
	msg := fmt.Sprintf("stage %q consumes %s %q: no stage upstream produces it", name, f.Kind(), f.Name())
	var where []string
	for _, p := range b.producersOf(f, func(s string) bool { return s != name }) {
		if down[p] {
			where = append(where, fmt.Sprintf("stage %q produces it downstream", p))
		} else {
			where = append(where, fmt.Sprintf("stage %q produces it on another branch", p))
		}
	}
	if len(where) > 0 {
		msg += " (" + strings.Join(where, "; ") + ")"
	}
	return errors.New(msg)
}

// producersOf lists, by name, the stages that pass keep and produce f.
func (b *builder) producersOf(f batch.Field, keep func(string) bool) []string {
	key := batch.Key(f)
	var out []string
	for _, name := range b.names {
		if !keep(name) {
			continue
		}
		for _, p := range b.fields[name].produces {
			if batch.Key(p) == key {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// contractPath places a missing producer at the stage's in, the wiring to
// change, or at its kind for a source.
func (b *builder) contractPath(name string) string {
	if b.cfg.Stages[name].In != "" {
		return stagePath(name, "in")
	}
	return stagePath(name, "kind")
}

// edges are the stages each stage reads from and publishes to, over the
// subjects that are not feedback.
func (b *builder) edges() (pred, succ map[string][]string) {
	pred, succ = map[string][]string{}, map[string][]string{}
	for subject, prods := range b.producers {
		if b.feedback[subject] {
			continue
		}
		for _, p := range prods {
			for _, c := range b.consumers[subject] {
				pred[c.stage] = append(pred[c.stage], p.stage)
				succ[p.stage] = append(succ[p.stage], c.stage)
			}
		}
	}
	return pred, succ
}

// reach is every stage reachable from name along next, name excluded
// unless a cycle returns to it.
func reach(name string, next map[string][]string) map[string]bool {
	seen := map[string]bool{}
	stack := append([]string(nil), next[name]...)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[s] {
			continue
		}
		seen[s] = true
		stack = append(stack, next[s]...)
	}
	return seen
}

// Fields lists every field the graph's stages declare, each once, in the
// order of the stages (what each produces, then what it consumes): the
// arrays among them are what a batch buffer of the graph must hold
// (batch.NewLayoutFor). It is empty when the stage kinds declare no fields
// (a Kinds that is not a FieldKinds).
func (g *Graph) Fields() []batch.Field {
	var out []batch.Field
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		for _, f := range append(append([]batch.Field(nil), n.Produces...), n.Consumes...) {
			if k := batch.Key(f); !seen[k] {
				seen[k] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// FieldNames is Fields as sorted keys ("array ids", "stat misses"), for
// messages and tests.
func (g *Graph) FieldNames() []string {
	var out []string
	for _, f := range g.Fields() {
		out = append(out, batch.Key(f))
	}
	sort.Strings(out)
	return out
}
