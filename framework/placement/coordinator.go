package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/config"
)

// ErrSilent is the cause of a WorkerError for a worker whose heartbeats
// stopped: killed, hung, or cut off from NATS.
var ErrSilent = errors.New("stopped answering (no heartbeat)")

// Coordinator is the run's side: it admits the workers of the placement,
// watches their heartbeats and asks for their reports.
type Coordinator struct {
	// completed is the latest completion count, repeated in every
	// heartbeat so that a lost "completed" message cannot leave a
	// worker's lookahead stage waiting for ever.
	completed atomic.Int64
	nc        *nats.Conn
	runID     string
	digest    string
	place     *config.Placement
	stages    []string // every stage of the graph
	runHost   string
	total     int

	subs    []*nats.Subscription
	stop    chan struct{}
	stopped sync.Once

	mu     sync.Mutex
	joined map[string]*joined
	// complete is set once every worker has joined and been welcomed:
	// only then are heartbeats expected.
	complete bool
	all      chan struct{} // closed once every worker has joined
	failed   chan error    // the first failure, buffered
}

type joined struct {
	Join
	last time.Time
	// msg is the Join request, answered once every worker has joined
	// (the Welcome names every stage's host).
	msg *nats.Msg
}

// NewCoordinator starts admitting the workers of cfg's placement to run
// runID, whose own host is labelled runHost. Each is welcomed, once every
// worker has joined, with total (the batches the run's sources make) and
// the host label of every stage.
func NewCoordinator(conn *bus.Conn, runID string, cfg *config.Config, total int, runHost string) (*Coordinator, error) {
	digest, err := Digest(cfg)
	if err != nil {
		return nil, err
	}
	stages := make([]string, 0, len(cfg.Stages))
	for name := range cfg.Stages {
		stages = append(stages, name)
	}
	c := &Coordinator{stages: stages,
		nc: conn.NATS(), runID: runID, digest: digest, place: cfg.Placement,
		runHost: runHost, total: total,
		stop: make(chan struct{}), joined: make(map[string]*joined),
		all: make(chan struct{}), failed: make(chan error, 1),
	}
	for subject, h := range map[string]nats.MsgHandler{
		Subject(runID, "join"):   c.onJoin,
		Subject(runID, "hb.*"):   c.onHeartbeat,
		Subject(runID, "failed"): c.onFailure,
		findSubject(digest):      func(m *nats.Msg) { _ = m.Respond([]byte(runID)) },
	} {
		s, err := c.nc.Subscribe(subject, h)
		if err != nil {
			c.Close(nil)
			return nil, fmt.Errorf("placement: subscribe %s: %w", subject, err)
		}
		c.subs = append(c.subs, s)
	}
	if err := c.nc.Flush(); err != nil {
		c.Close(nil)
		return nil, fmt.Errorf("placement: %w", err)
	}
	go c.beat()
	return c, nil
}

// Digest is the graph digest workers must present.
func (c *Coordinator) Digest() string { return c.digest }

// onJoin admits a worker whose digest, name and stages match the
// placement, once.
func (c *Coordinator) onJoin(m *nats.Msg) {
	var j Join
	if err := json.Unmarshal(m.Data, &j); err != nil {
		c.refuse(m, fmt.Errorf("bad join: %w", err))
		return
	}
	if err := c.admit(j, m); err != nil {
		c.refuse(m, err)
	}
}

func (c *Coordinator) admit(j Join, m *nats.Msg) error {
	if j.Digest != c.digest {
		return fmt.Errorf("worker %s holds another graph (digest %s, the run's is %s): give it the run's graph file and the same --set flags", j.Worker, j.Digest, c.digest)
	}
	w, ok := c.place.Workers[j.Worker]
	if !ok {
		return fmt.Errorf("the placement has no worker %q (it has %s)", j.Worker, strings.Join(c.place.WorkerNames(), ", "))
	}
	if !SameSet(w.Stages, j.Stages) {
		return fmt.Errorf("worker %s offers stages %v; the placement gives it %v", j.Worker, j.Stages, w.Stages)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, dup := c.joined[j.Worker]; dup {
		return fmt.Errorf("worker %s has already joined (pid %d on %s)", j.Worker, prev.PID, prev.Host)
	}
	if j.Error != "" {
		c.fail(&WorkerError{Worker: j.Worker, Host: j.Host, PID: j.PID, Stages: j.Stages, Err: errors.New(j.Error)})
		return errors.New("the run fails with the worker's error")
	}
	c.joined[j.Worker] = &joined{Join: j, last: time.Now(), msg: m}
	if len(c.joined) == len(c.place.Workers) {
		c.welcomeAll()
		close(c.all)
	}
	return nil
}

// welcomeAll answers every Join once all have come; c.mu is held.
func (c *Coordinator) welcomeAll() {
	c.complete = true
	data, _ := json.Marshal(Welcome{Total: c.total, Hosts: c.hostsLocked()})
	for _, j := range c.joined {
		_ = j.msg.Respond(data)
		j.last = time.Now()
	}
}

// Hosts is the host label of every stage, once every worker has joined.
func (c *Coordinator) Hosts() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hostsLocked()
}

func (c *Coordinator) hostsLocked() map[string]string {
	hosts := make(map[string]string, len(c.stages))
	for _, s := range c.stages {
		hosts[s] = c.runHost
		if name := c.place.WorkerOf(s); name != "" {
			if j, ok := c.joined[name]; ok {
				hosts[s] = j.Host
			}
		}
	}
	return hosts
}

func (c *Coordinator) refuse(m *nats.Msg, err error) {
	data, _ := json.Marshal(Welcome{Error: err.Error()})
	_ = m.Respond(data)
}

// SameSet reports whether a and b hold the same names, in any order (a
// worker's stages against the placement's).
func SameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

func (c *Coordinator) onHeartbeat(m *nats.Msg) {
	name := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	c.mu.Lock()
	if j, ok := c.joined[name]; ok {
		j.last = time.Now()
	}
	c.mu.Unlock()
}

func (c *Coordinator) onFailure(m *nats.Msg) {
	var f Failure
	if err := json.Unmarshal(m.Data, &f); err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail(c.errorOf(f.Worker, errors.New(f.Error)))
}

// errorOf is a WorkerError for worker name; c.mu is held.
func (c *Coordinator) errorOf(name string, err error) *WorkerError {
	e := &WorkerError{Worker: name, Err: err}
	if j, ok := c.joined[name]; ok {
		e.Host, e.PID, e.Stages = j.Host, j.PID, j.Stages
	}
	return e
}

// fail records the first failure; c.mu is held.
func (c *Coordinator) fail(err error) {
	select {
	case c.failed <- err:
	default:
	}
}

// Failed delivers the first worker failure: a stage error it reported,
// or its silence for longer than placement.silence.
// A nil Coordinator (no placement) never fails.
func (c *Coordinator) Failed() <-chan error {
	if c == nil {
		return nil
	}
	return c.failed
}

// beat publishes the run's heartbeat and checks the workers'.
func (c *Coordinator) beat() {
	t := time.NewTicker(Heartbeat / 2)
	defer t.Stop()
	hb := Subject(c.runID, "hb."+config.ReservedWorker)
	for n := 0; ; n++ {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			if n%2 == 0 {
				_ = c.nc.Publish(hb, strconv.AppendInt(nil, c.completed.Load(), 10))
			}
			c.checkSilence(now)
		}
	}
}

func (c *Coordinator) checkSilence(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.complete {
		return
	}
	for name, j := range c.joined {
		if gap := now.Sub(j.last); gap > c.place.SilenceFor() {
			c.fail(c.errorOf(name, fmt.Errorf("%w for %v", ErrSilent, gap.Round(time.Millisecond))))
		}
	}
}

// Await waits until every worker of the placement has joined, a worker
// failed, ctx ends or placement.wait passes; the error of a timeout
// names the workers missing and how to start one.
func (c *Coordinator) Await(ctx context.Context, hint func(worker string) string) error {
	t := time.NewTimer(c.place.WaitFor())
	defer t.Stop()
	select {
	case <-c.all:
		return nil
	case err := <-c.failed:
		c.mu.Lock()
		c.fail(err) // keep it for Failed
		c.mu.Unlock()
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []string
	for _, name := range c.place.WorkerNames() {
		if _, ok := c.joined[name]; !ok {
			missing = append(missing, "  "+hint(name))
		}
	}
	return fmt.Errorf("placement: no worker joined run %s within %s for %d of %d workers; start them:\n%s",
		c.runID, c.place.WaitFor(), len(missing), len(c.place.Workers), strings.Join(missing, "\n"))
}

// Joined is the Join of each admitted worker.
func (c *Coordinator) Joined() map[string]Join {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Join, len(c.joined))
	for name, j := range c.joined {
		out[name] = j.Join
	}
	return out
}

// Completed tells the workers that n batches have left the graph (a
// sequential graph's lookahead stage waits for it).
func (c *Coordinator) Completed(n int) {
	c.completed.Store(int64(n))
	_ = c.nc.Publish(Subject(c.runID, "completed"), strconv.AppendInt(nil, int64(n), 10))
}

// Reports asks every worker for what its stages measured, once the run
// has seen every batch; the worker finishes its stages first.
func (c *Coordinator) Reports(ctx context.Context) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage)
	for _, name := range c.place.WorkerNames() {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := c.nc.RequestWithContext(rctx, Subject(c.runID, "report."+name), nil)
		cancel()
		if err != nil {
			c.mu.Lock()
			werr := c.errorOf(name, fmt.Errorf("no report: %w", err))
			c.mu.Unlock()
			return nil, werr
		}
		var r Report
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return nil, fmt.Errorf("worker %s: bad report: %w", name, err)
		}
		if r.Error != "" {
			c.mu.Lock()
			werr := c.errorOf(name, errors.New(r.Error))
			c.mu.Unlock()
			return nil, werr
		}
		out[name] = r.Measures
	}
	return out, nil
}

// Close tells the workers the run has ended (with err, nil when it
// completed) and stops admitting and watching them. Nil: nothing to do.
func (c *Coordinator) Close(err error) {
	if c == nil {
		return
	}
	c.stopped.Do(func() {
		close(c.stop)
		var end End
		if err != nil {
			end.Error = err.Error()
		}
		data, _ := json.Marshal(end)
		_ = c.nc.Publish(Subject(c.runID, "end"), data)
		_ = c.nc.Flush()
		for _, s := range c.subs {
			_ = s.Unsubscribe()
		}
	})
}
