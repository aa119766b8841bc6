package config

import (
	"strings"
	"testing"
	"time"
)

// No placement key, no placement; --set turns one on; a stage the graph
// lacks, a stage placed twice, a worker without stages and a bad wait
// are refused at their keys.
func TestPlacementSection(t *testing.T) {
	cfg, _, err := Load("testdata/good.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Placement != nil || cfg.Placement.WorkerOf("plan") != "" {
		t.Fatalf("placement without the key: %+v", cfg.Placement)
	}
	var stage string
	for name := range cfg.Stages {
		stage = name
		break
	}
	cfg, _, err = Load("testdata/good.yaml", []string{"placement.workers.w1.stages=[" + stage + "]", "placement.wait=5s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Placement.WorkerOf(stage) != "w1" || cfg.Placement.WaitFor() != 5*time.Second {
		t.Errorf("placement %+v", cfg.Placement)
	}
	_, _, err = Load("testdata/good.yaml", []string{
		"placement.workers.w1.stages=[nope," + stage + "]", "placement.workers.w2.stages=[" + stage + "]",
		"placement.workers.w3.stages=[]", "placement.wait=soon", "placement.silence=10ms",
		"placement.workers.run.stages=[]",
	})
	for _, want := range []string{
		`placement::workers::w1::stages::0: "nope" is not a stage`,
		"is placed on both w1 and w2",
		"placement::workers::w3::stages: a worker runs at least one stage",
		`placement::wait: "soon" is not a positive duration`,
		`placement::silence: "10ms" is not a duration of at least 300ms`,
		`placement::workers::run: worker name "run" is the run's own`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad placement: %v\nwant %q", err, want)
		}
	}
}
