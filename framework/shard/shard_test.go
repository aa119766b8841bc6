package shard_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/shard"
)

const (
	seed   = 7
	tables = 3
	rows   = 5000
	dim    = 4
	stride = 8
)

// cluster is an embedded NATS server with n shard services on it.
type cluster struct {
	nc     *nats.Conn
	stops  []context.CancelFunc
	shards []*shard.Service
}

func startCluster(t *testing.T, run string, n int, maxPayload int32) *cluster {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.ServerOptions{MaxPayload: maxPayload})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	conn := func() *nats.Conn {
		c, err := bus.Connect(srv.ClientURL(), srv.Auth())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c.NATS()
	}
	cl := &cluster{nc: conn()}
	for i := range n {
		s, err := shard.NewService(i, n)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		nc := conn()
		go func() { defer close(done); _ = s.Serve(ctx, nc, run) }()
		cl.stops = append(cl.stops, func() { cancel(); <-done })
		cl.shards = append(cl.shards, s)
		t.Cleanup(cl.stops[i])
	}
	return cl
}

func stagingTables(t *testing.T, cl *cluster, run string) (*batch.Tables, *shard.Client) {
	t.Helper()
	return stagingTablesTimeout(t, cl, run, 0)
}

func stagingTablesTimeout(t *testing.T, cl *cluster, run string, timeout time.Duration) (*batch.Tables, *shard.Client) {
	t.Helper()
	c, err := shard.NewClient(cl.nc, run, len(cl.shards), timeout)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	all := []int64{rows, rows / 2, rows}
	if err := c.Configure(seed, all, dim, stride); err != nil {
		t.Fatal(err)
	}
	st, err := batch.NewTablesRows(seed, all, dim, stride)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Stage(c); err != nil {
		t.Fatal(err)
	}
	return st, c
}

// train plays the same batches on plain tables and on staging ones: each
// batch leases its rows (buffers reused round-robin, as the pool does),
// adds to each of its rows, and writes back some earlier rows outside any
// lease (a scratchpad's victims). The digests must agree.
func train(t *testing.T, plain, staged *batch.Tables, batches int, rng *rand.Rand) {
	t.Helper()
	var seen [tables][]int64
	row := make([]float32, stride)
	for b := range batches {
		ids := make([][]int64, tables)
		for tab := range ids {
			n := plain.RowsOf(tab)
			for range 40 {
				ids[tab] = append(ids[tab], min(n-1, int64(rng.ExpFloat64()*float64(n)/8)))
			}
		}
		if err := plain.TouchTables(ids); err != nil {
			t.Fatal(err)
		}
		if _, err := staged.TouchBatch(string(rune('a'+b%3)), ids); err != nil {
			t.Fatal(err)
		}
		for tab, tids := range ids {
			for i, id := range tids {
				p, s := plain.Row(tab, id), staged.Row(tab, id)
				for j := range p {
					p[j] += float32(b+i+j) / 64
					s[j] += float32(b+i+j) / 64
				}
				seen[tab] = append(seen[tab], id)
			}
			for k := range 5 {
				id := seen[tab][rng.IntN(len(seen[tab]))]
				for j := range row {
					row[j] = float32(b*k+j) / 32
				}
				plain.WriteRow(tab, id, row, uint64(b))
				staged.WriteRow(tab, id, row, uint64(b))
			}
		}
	}
}

func TestStagingMatchesOneProcess(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		for _, s := range []uint64{1, 2} {
			run := "t" + string(rune('0'+n)) + string(rune('0'+s))
			cl := startCluster(t, run, n, 0)
			staged, c := stagingTables(t, cl, run)
			plain, err := batch.NewTablesRows(seed, []int64{rows, rows / 2, rows}, dim, stride)
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Close()
			train(t, plain, staged, 60, rand.New(rand.NewPCG(s, 9)))
			if st := staged.StagingStats(); st.Staged > 3*3*40+3*5 {
				t.Errorf("%d shards: %d rows staged, more than 3 buffers' leases and the loose writes", n, st.Staged)
			}
			want := plain.Digest([]byte("dense"))
			got, err := staged.DigestErr([]byte("dense"))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%d shards, seed %d: digest %s, one process %s", n, s, got[:12], want[:12])
			}
			if st := staged.StagingStats(); st.Staged != 0 || st.Fetched == 0 || st.Returned < st.Fetched {
				t.Errorf("%d shards: after the digest %+v: every staged row must be back", n, st)
			}
			var held int64
			for _, sv := range cl.shards {
				for tab := range tables {
					held += sv.Tables().TouchedRows(tab)
				}
			}
			var touched int64
			for tab := range tables {
				touched += plain.TouchedRows(tab)
			}
			if held != touched {
				t.Errorf("%d shards hold %d rows, one process touched %d", n, held, touched)
			}
			for i := range n {
				if tr := c.Traffic(i); n > 1 && tr.Requests.Load() == 0 {
					t.Errorf("shard %d got no request", i)
				}
			}
		}
	}
}

// A payload limit far below a batch's rows: calls are cut into several
// messages, and nothing changes.
func TestStagingChunksUnderMaxPayload(t *testing.T) {
	cl := startCluster(t, "chunk", 2, 8<<10)
	staged, c := stagingTables(t, cl, "chunk")
	plain, err := batch.NewTablesRows(seed, []int64{rows, rows / 2, rows}, dim, stride)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	train(t, plain, staged, 30, rand.New(rand.NewPCG(3, 9)))
	got, err := staged.DigestErr(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := plain.Digest(nil); got != want {
		t.Errorf("digest %s, one process %s", got[:12], want[:12])
	}
	if r := c.Traffic(0).Requests.Load(); r < 60 {
		t.Errorf("shard 0: %d requests for 30 batches under an 8 KiB payload: want chunks", r)
	}
}

// A shard that stops answering fails the next batch, naming it, within
// the client's timeout.
func TestKilledShardFailsNamingIt(t *testing.T) {
	cl := startCluster(t, "kill", 3, 0)
	staged, _ := stagingTables(t, cl, "kill")
	ids := [][]int64{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}
	if _, err := staged.TouchBatch("a", ids); err != nil {
		t.Fatal(err)
	}
	cl.stops[1]()
	start := time.Now()
	next := [][]int64{{11, 12, 13, 14, 15, 16, 17, 18, 19}, {11, 12, 13, 14, 15, 16, 17, 18, 19}, {11, 12, 13, 14, 15, 16, 17, 18, 19}}
	_, err := staged.TouchBatch("b", next)
	if err == nil {
		t.Fatal("a batch with rows of a stopped shard succeeded")
	}
	if !strings.Contains(err.Error(), "table shard 1 of 3") {
		t.Errorf("error %q does not name shard 1", err)
	}
	// A hang guard, not a timing check: a request to a shard that is
	// there waits 30 timeouts; a gone one is found within a few.
	if d := time.Since(start); d > 10*shard.DefaultTimeout {
		t.Errorf("failure took %v: the shard's absence was not detected", d)
	}
	if _, err := staged.DigestErr(nil); err == nil {
		t.Error("a digest with a shard gone succeeded")
	}
}

// A shard that dies with a request in flight fails the call within about
// a quarter of the timeout of its death; one that is only slow (answers
// after more than the timeout) is waited for.
func TestInFlightDeathAndSlowShard(t *testing.T) {
	const timeout = 400 * time.Millisecond
	cl := startCluster(t, "slow", 2, 0)
	cl.stops[1]() // shard 1 is served by hand, below
	svc, err := shard.NewService(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	var delay atomic.Int64
	slow, err := cl.nc.Subscribe(shard.Subject("slow", 1), func(m *nats.Msg) {
		time.Sleep(time.Duration(delay.Load()))
		_ = m.Respond(svc.Handle(m.Data))
	})
	if err != nil {
		t.Fatal(err)
	}
	staged, _ := stagingTablesTimeout(t, cl, "slow", timeout)
	ids := func(from int64) [][]int64 { return [][]int64{{from, from + 1, from + 2, from + 3}, nil, nil} }

	// Slow: the answer comes after 1.5 timeouts.
	delay.Store(int64(timeout * 3 / 2))
	if _, err := staged.TouchBatch("a", ids(10)); err != nil {
		t.Fatalf("a slow shard failed the batch: %v", err)
	}
	_ = slow.Unsubscribe()

	// Dead mid-request: it takes the request, never answers, and leaves.
	died := make(chan time.Time, 1)
	dead, err := cl.nc.Subscribe(shard.Subject("slow", 1), func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(timeout / 2)
		_ = dead.Unsubscribe()
		died <- time.Now()
	}()
	_, err = staged.TouchBatch("b", ids(20))
	if err == nil || !strings.Contains(err.Error(), "table shard 1 of 2") || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("a shard gone mid-request: %v", err)
	}
	// A hang guard, not a timing check (as above).
	if d := time.Since(<-died); d > 10*timeout {
		t.Errorf("failed %v after the shard left: its absence was not detected", d)
	}
}

// TestSilentRunIsDropped: a shard process (Once) whose run stops asking
// without saying it is done (killed) drops the run's rows and leaves,
// naming it, instead of holding them for ever.
func TestSilentRunIsDropped(t *testing.T) {
	cl := startCluster(t, "quiet", 2, 0)
	cl.stops[1]() // shard 1 runs below, with Once and an idle bound
	svc, err := shard.NewService(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	svc.Once, svc.Idle = true, 300*time.Millisecond
	served := make(chan error, 1)
	go func() { served <- svc.Serve(context.Background(), cl.nc, "quiet") }()
	stagingTables(t, cl, "quiet") // configures both shards, then asks nothing more
	if svc.Tables() == nil {
		t.Fatal("shard 1 was not configured")
	}
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "run quiet sent nothing") {
			t.Fatalf("Serve ended with %v, want the silent run named", err)
		}
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the shard still holds a silent run's rows after 30 s")
	}
	if svc.Tables() != nil {
		t.Error("the silent run's tables were kept")
	}
}
