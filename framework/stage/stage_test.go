package stage

import (
	"context"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/hazard"
)

// A throwaway stage kind with an array of its own, declared outside
// framework/batch, and a field that depends on its options.
var keys = batch.NewArray[float32]("throwaway_keys", func(s batch.Shape) int64 { return int64(s.BatchSize) })

type throwawayConfig struct {
	Cached bool `mapstructure:"cached"`
}

func (c *throwawayConfig) Validate() error { return nil }

func (c *throwawayConfig) BatchFields() Fields {
	if c.Cached {
		return Fields{Consumes: []batch.Field{batch.Slots}}
	}
	return Fields{}
}

type throwaway struct{ cfg *throwawayConfig }

func (throwaway) Process(context.Context, *batch.Batch) error { return nil }

func throwawayFactory() Factory {
	return New("throwaway", throwawayConfig{},
		func(_ context.Context, _ Settings, c *throwawayConfig) (any, error) { return throwaway{c}, nil },
		Requires(NeedLayout|NeedTables),
		WithFields([]batch.Field{keys}, []batch.Field{batch.IDs}),
		WithHazardRole(hazard.Collect))
}

func TestFactoryDeclaresFields(t *testing.T) {
	r, err := NewRegistry(throwawayFactory())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := r.DecodeOptions("throwaway", map[string]any{"cached": true})
	if err != nil {
		t.Fatal(err)
	}
	p, c := r.Fields("throwaway", cfg)
	if len(p) != 1 || p[0] != batch.Field(keys) || len(c) != 2 || c[0] != batch.Field(batch.IDs) || c[1] != batch.Field(batch.Slots) {
		t.Errorf("produces %v, consumes %v", p, c)
	}
	plain, _ := r.DecodeOptions("throwaway", nil)
	if _, c := r.Fields("throwaway", plain); len(c) != 1 {
		t.Errorf("without cached, consumes %v", c)
	}
	if r.HazardRole("throwaway") != hazard.Collect || r.HazardRole("other") != "" {
		t.Error("hazard role not declared")
	}
	if r.HazardName("throwaway") != "collect" || r.HazardName("other") != "other" {
		t.Error("hazard names: a role, else the kind")
	}
}

func TestFactoryRequiresAndTypesItsConfig(t *testing.T) {
	f := throwawayFactory()
	_, err := f.Create(context.Background(), Settings{Name: "x"}, f.CreateDefaultConfig())
	if err == nil || !strings.Contains(err.Error(), "create stage throwaway/x: throwaway needs the host tables and the batch layout") {
		t.Errorf("err = %v", err)
	}
	set := Settings{Name: "x", Tables: &batch.Tables{}, Layout: &batch.Layout{}}
	a, b := f.CreateDefaultConfig(), f.CreateDefaultConfig()
	a.(*throwawayConfig).Cached = true
	if b.(*throwawayConfig).Cached {
		t.Error("stages share their defaults")
	}
	s, err := f.Create(context.Background(), set, a)
	if err != nil || !s.(throwaway).cfg.Cached {
		t.Errorf("create: %v, %#v", err, s)
	}
}
