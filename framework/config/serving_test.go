package config

import (
	"reflect"
	"testing"
)

// No serving key, no serving; one --set turns it on, with the section's
// defaults (20,000 queries, the graph's seed, one server per device).
func TestServingSection(t *testing.T) {
	cfg, _, err := Load("testdata/good.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Serving != nil {
		t.Fatalf("serving without the key: %+v", cfg.Serving)
	}
	cfg, _, err = Load("testdata/good.yaml", []string{"seed=9", "serving.qps=500", "serving.sla_ms=25", "serving.servers={host: 64}"})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Serving
	if s == nil || s.QPS != 500 || s.SLAMs != 25 || !reflect.DeepEqual(s.Servers, map[string]int{"host": 64}) {
		t.Fatalf("serving = %+v", s)
	}
	if s.QueriesOrDefault() != DefaultQueries || s.SeedOr(cfg.Seed) != 9 {
		t.Errorf("defaults: %d queries, seed %d", s.QueriesOrDefault(), s.SeedOr(cfg.Seed))
	}
	if (*Serving)(nil).SeedOr(3) != 3 || (&Serving{Seed: 4}).SeedOr(3) != 4 {
		t.Error("SeedOr")
	}
}
