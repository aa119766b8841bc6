package placement

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/config"
)

// conns connects n clients to a new embedded server.
func conns(t *testing.T, n int) []*bus.Conn {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.ServerOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	var cs []*bus.Conn
	for i := 0; i < n; i++ {
		c, err := bus.Connect(srv.ClientURL(), srv.Auth())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		cs = append(cs, c)
	}
	return cs
}

func graphCfg(seed int) *config.Config {
	return &config.Config{
		Echo:   map[string]any{"seed": seed, "stages": map[string]any{"load": 1, "plan": 2, "train": 3}},
		Stages: map[string]config.Stage{"load": {}, "plan": {}, "train": {}},
		Placement: &config.Placement{Wait: "5s", Workers: map[string]config.PlacedWorker{
			"w1": {Stages: []string{"plan"}},
		}},
	}
}

func join(t *testing.T, cfg *config.Config, worker string, stages ...string) Join {
	t.Helper()
	d, err := Digest(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return Join{Worker: worker, Host: "far", PID: 7, Stages: stages, Digest: d, Lookahead: map[string]int{"plan": 2}}
}

// TestJoinAndReport: a worker with the run's graph is welcomed once all
// have joined (with the total and every stage's host), reports when asked
// and leaves with the run's end.
func TestJoinAndReport(t *testing.T) {
	cs := conns(t, 2)
	cfg := graphCfg(1)
	c, err := NewCoordinator(cs[0], "r1", cfg, 42, "home")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(nil)
	ctx := context.Background()
	m, w, err := JoinRun(ctx, cs[1], "r1", join(t, cfg, "w1", "plan"), 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if w.Total != 42 || w.Hosts["plan"] != "far" || w.Hosts["load"] != "home" {
		t.Errorf("welcome %+v, want total 42, plan on far, load at home", w)
	}
	if err := c.Await(ctx, func(w string) string { return w }); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- m.Serve(ctx, func() (json.RawMessage, error) { return json.RawMessage(`{"x":1}`), nil })
	}()
	reports, err := c.Reports(ctx)
	if err != nil || string(reports["w1"]) != `{"x":1}` {
		t.Fatalf("reports %v, %v", reports, err)
	}
	c.Close(nil)
	if err := <-served; err != nil {
		t.Errorf("the worker left the completed run with %v", err)
	}
}

// TestJoinRefused: another graph digest, a worker the placement does not
// name, stages it does not give, and a second worker of one name are
// refused, each saying why.
func TestJoinRefused(t *testing.T) {
	cs := conns(t, 2)
	cfg := graphCfg(1)
	c, err := NewCoordinator(cs[0], "r2", cfg, 1, "home")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(nil)
	ctx := context.Background()
	for _, tc := range []struct {
		j    Join
		want string
	}{
		{join(t, graphCfg(2), "w1", "plan"), "holds another graph"},
		{join(t, cfg, "w9", "plan"), `no worker "w9"`},
		{join(t, cfg, "w1", "plan", "train"), "offers stages"},
	} {
		_, _, err := JoinRun(ctx, cs[1], "r2", tc.j, 5*time.Second, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("join %+v: %v, want %q", tc.j, err, tc.want)
		}
	}
	m, _, err := JoinRun(ctx, cs[1], "r2", join(t, cfg, "w1", "plan"), 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, _, err := JoinRun(ctx, cs[1], "r2", join(t, cfg, "w1", "plan"), 5*time.Second, nil); err == nil || !strings.Contains(err.Error(), "already joined") {
		t.Errorf("second w1: %v, want already joined", err)
	}
}

// TestSilentWorker: a joined worker whose heartbeat stops (it closed
// without a word, as a killed one does) fails the run with a WorkerError
// naming it.
func TestSilentWorker(t *testing.T) {
	cs := conns(t, 2)
	cfg := graphCfg(1)
	c, err := NewCoordinator(cs[0], "r3", cfg, 1, "home")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(nil)
	m, _, err := JoinRun(context.Background(), cs[1], "r3", join(t, cfg, "w1", "plan"), 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	select {
	case err := <-c.Failed():
		var we *WorkerError
		if !errors.As(err, &we) || we.Worker != "w1" || we.PID != 7 || !errors.Is(err, ErrSilent) {
			t.Errorf("failure %v, want w1 (pid 7) silent", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a silent worker did not fail the run")
	}
}

// TestAwaitTimeout: a worker that never comes fails the wait with the
// command that starts it.
func TestAwaitTimeout(t *testing.T) {
	cs := conns(t, 1)
	cfg := graphCfg(1)
	cfg.Placement.Wait = "100ms"
	c, err := NewCoordinator(cs[0], "r4", cfg, 1, "home")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(nil)
	err = c.Await(context.Background(), func(w string) string { return "flowrun worker --name " + w })
	if err == nil || !strings.Contains(err.Error(), "flowrun worker --name w1") {
		t.Errorf("await without the worker: %v, want its command", err)
	}
}

// TestLostCompletedIsMadeGood: a completion count the worker never
// received (published before it listened, as a message lost in a
// reconnect would be) reaches it with the run's next heartbeat, so a
// lookahead stage waiting for it does not wait for ever.
func TestLostCompletedIsMadeGood(t *testing.T) {
	cs := conns(t, 2)
	cfg := graphCfg(1)
	c, err := NewCoordinator(cs[0], "r5", cfg, 42, "home")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(nil)
	c.Completed(5) // nobody listens yet: this message is lost
	got := make(chan int, 64)
	m, _, err := JoinRun(context.Background(), cs[1], "r5", join(t, cfg, "w1", "plan"), 5*time.Second, func(n int) { got <- n })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	deadline := time.After(30 * time.Second) // a hang guard, not a timing check
	for {
		select {
		case n := <-got:
			if n == 5 {
				return
			}
		case <-deadline:
			t.Fatal("the lost completion count never reached the worker")
		}
	}
}
