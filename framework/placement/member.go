package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/config"
)

// ErrRunSilent is why a worker leaves a run whose heartbeat stopped.
var ErrRunSilent = errors.New("the run stopped answering (no heartbeat)")

// ErrRefused wraps the run's reason for refusing a worker (another graph
// digest, a name or stages the placement does not give it).
var ErrRefused = errors.New("refused")

// Find asks the NATS server for the run of the graph with digest, until
// one answers or wait passes: a worker started without --run.
func Find(ctx context.Context, conn *bus.Conn, digest string, wait time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		m, err := conn.NATS().RequestWithContext(ctx, findSubject(digest), nil)
		if err == nil {
			return string(m.Data), nil
		}
		if !errors.Is(err, nats.ErrNoResponders) {
			return "", fmt.Errorf("no run of this graph (digest %s) answered within %v: %w", digest, wait, err)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return "", fmt.Errorf("no run of this graph (digest %s) answered within %v", digest, wait)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Member is the worker's side of a run it has joined.
type Member struct {
	nc      *nats.Conn
	runID   string
	worker  string
	lastRun atomic.Int64 // unix nanoseconds of the run's last heartbeat
	subs    []*nats.Subscription
	end     chan End
	report  chan *nats.Msg
	done    chan struct{}
	closed  sync.Once
}

// JoinRun sends j to run runID until the run answers (it may not be up
// yet) or wait passes, and returns the member and the run's Welcome; a
// refusal is an error with the run's reason. onCompleted, when set, is
// called with each completion count the run publishes.
func JoinRun(ctx context.Context, conn *bus.Conn, runID string, j Join, wait time.Duration, onCompleted func(int)) (*Member, Welcome, error) {
	m := &Member{nc: conn.NATS(), runID: runID, worker: j.Worker, end: make(chan End, 1), report: make(chan *nats.Msg, 1), done: make(chan struct{})}
	m.lastRun.Store(time.Now().UnixNano())
	handlers := map[string]nats.MsgHandler{
		// The run's heartbeat carries its latest completion count too:
		// a lost "completed" message is made good within a beat.
		Subject(runID, "hb."+config.ReservedWorker): func(msg *nats.Msg) {
			m.lastRun.Store(time.Now().UnixNano())
			if n, err := strconv.Atoi(string(msg.Data)); err == nil && onCompleted != nil {
				onCompleted(n)
			}
		},
		Subject(runID, "end"): func(msg *nats.Msg) {
			var e End
			_ = json.Unmarshal(msg.Data, &e)
			select {
			case m.end <- e:
			default:
			}
		},
		Subject(runID, "report."+j.Worker): func(msg *nats.Msg) { m.report <- msg },
	}
	if onCompleted != nil {
		handlers[Subject(runID, "completed")] = func(msg *nats.Msg) {
			if n, err := strconv.Atoi(string(msg.Data)); err == nil {
				onCompleted(n)
			}
		}
	}
	for subject, h := range handlers {
		s, err := m.nc.Subscribe(subject, h)
		if err != nil {
			m.Close()
			return nil, Welcome{}, fmt.Errorf("placement: subscribe %s: %w", subject, err)
		}
		m.subs = append(m.subs, s)
	}
	w, err := m.join(ctx, j, wait)
	if err != nil {
		m.Close()
		return nil, Welcome{}, err
	}
	go m.beat()
	return m, w, nil
}

func (m *Member) join(ctx context.Context, j Join, wait time.Duration) (Welcome, error) {
	data, err := json.Marshal(j)
	if err != nil {
		return Welcome{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		reply, err := m.nc.RequestWithContext(ctx, Subject(m.runID, "join"), data)
		if err == nil {
			var w Welcome
			if err := json.Unmarshal(reply.Data, &w); err != nil {
				return Welcome{}, fmt.Errorf("join run %s: bad answer: %w", m.runID, err)
			}
			if w.Error != "" {
				return Welcome{}, fmt.Errorf("run %s %w worker %s: %s", m.runID, ErrRefused, j.Worker, w.Error)
			}
			return w, nil
		}
		if !errors.Is(err, nats.ErrNoResponders) {
			return Welcome{}, fmt.Errorf("join run %s: %w", m.runID, err)
		}
		if sleep(ctx, 50*time.Millisecond) != nil {
			return Welcome{}, fmt.Errorf("join run %s: no such run answered within %v", m.runID, wait)
		}
	}
}

func (m *Member) beat() {
	hb := Subject(m.runID, "hb."+m.worker)
	t := time.NewTicker(Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-t.C:
			if m.nc.IsClosed() {
				return
			}
			_ = m.nc.Publish(hb, nil)
		}
	}
}

// Fail tells the run a stage of this worker failed.
func (m *Member) Fail(err error) {
	data, _ := json.Marshal(Failure{Worker: m.worker, Error: err.Error()})
	_ = m.nc.Publish(Subject(m.runID, "failed"), data)
	_ = m.nc.Flush()
}

// Serve answers the run until it ends: a report request is answered with
// what report returns (called once). It returns nil when the run ended
// complete, an error with the run's reason when it failed, ErrRunSilent
// when its heartbeat stopped, or ctx's error.
func (m *Member) Serve(ctx context.Context, report func() (json.RawMessage, error)) error {
	t := time.NewTicker(Heartbeat)
	defer t.Stop()
	for {
		select {
		case e := <-m.end:
			if e.Error != "" {
				return fmt.Errorf("run %s failed: %s", m.runID, e.Error)
			}
			return nil
		case msg := <-m.report:
			var r Report
			if meas, err := report(); err != nil {
				r.Error = err.Error()
			} else {
				r.Measures = meas
			}
			data, _ := json.Marshal(r)
			_ = msg.Respond(data)
		case <-t.C:
			if gap := time.Since(time.Unix(0, m.lastRun.Load())); gap > RunSilence {
				return fmt.Errorf("run %s: %w for %v", m.runID, ErrRunSilent, gap.Round(time.Millisecond))
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops the heartbeat and leaves the run's subjects.
func (m *Member) Close() {
	m.closed.Do(func() {
		close(m.done)
		for _, s := range m.subs {
			_ = s.Unsubscribe()
		}
	})
}
