package graph

import (
	"reflect"
	"testing"

	"github.com/flowrun/flowrun/framework/config"
)

// A graph's nodes carry the fields their stages declare, and Graph.Fields
// lists each once, in node order: what the batch layout must hold.
func TestBuildFields(t *testing.T) {
	g, err := build(t, "testdata/good/linear.yaml", "stages.train.cached=true")
	if err != nil {
		t.Fatal(err)
	}
	train, _ := g.Node("train")
	if len(train.Consumes) != 2 || train.Consumes[1] != fakeMisses {
		t.Errorf("train consumes %v, want ids and misses", train.Consumes)
	}
	if got, want := g.FieldNames(), []string{"array ids", "stat misses"}; !reflect.DeepEqual(got, want) {
		t.Errorf("fields = %v, want %v", got, want)
	}
}

// Kinds that declare no fields get no contract check and no fields.
func TestBuildWithoutFieldKinds(t *testing.T) {
	cfg, src, err := config.Load("testdata/good/linear.yaml", []string{"stages.train.cached=true"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Build(cfg, src, undeclared{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := g.Fields(); len(f) != 0 {
		t.Errorf("fields = %v, want none", f)
	}
}

// undeclared is fakeKinds without its Fields method.
type undeclared struct{ k fakeKinds }

func (u undeclared) Known(kind string) bool    { return u.k.Known(kind) }
func (u undeclared) Names() []string           { return u.k.Names() }
func (u undeclared) IsSource(kind string) bool { return u.k.IsSource(kind) }
func (u undeclared) DecodeOptions(kind string, options map[string]any) (any, error) {
	return u.k.DecodeOptions(kind, options)
}
