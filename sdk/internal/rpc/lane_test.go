package rpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowrun/flowrun/sdk/internal/pb"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// laneBase is a plugin whose Info says how often it was asked, and whose
// Configure fails as asked.
type laneBase struct {
	mu      sync.Mutex
	calls   int
	block   chan struct{} // Configure waits on it when not nil
	entered chan struct{} // Configure closes it as it starts, when not nil
}

func (b *laneBase) Info(context.Context) (plugin.Info, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	return plugin.Info{Name: fmt.Sprintf("call %d", b.calls), Version: "1"}, nil
}

func (b *laneBase) Configure(_ context.Context, s plugin.Setup) error {
	if b.entered != nil {
		close(b.entered)
	}
	if b.block != nil {
		<-b.block
	}
	if s.Seed == 7 {
		return fmt.Errorf("seed 7: %w", plugin.ErrInvalidConfig)
	}
	return nil
}

// laneKind is a kind with only Info and Configure, on the device service.
var laneKind = NewKind(plugin.KindDevice, pb.RegisterDeviceServer, pb.NewDeviceClient,
	func(b BaseServer[plugin.Base]) pb.DeviceServer {
		return &struct {
			BaseServer[plugin.Base]
			unimplementedDevice
		}{BaseServer: b}
	},
	func(b BaseClient[pb.DeviceClient]) BaseClient[pb.DeviceClient] { return b })

type unimplementedDevice struct{ pb.UnimplementedDeviceServer }

func dialLane(t *testing.T, impl plugin.Base) plugin.Base {
	t.Helper()
	client, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{"k": laneKind.Server(impl)})
	t.Cleanup(func() { client.Close() })
	raw, err := client.Dispense("k")
	if err != nil {
		t.Fatal(err)
	}
	return raw.(plugin.Base)
}

// A plugin's calls go through its lane, answers and errors alike, the
// sentinel errors intact.
func TestLaneCarriesCalls(t *testing.T) {
	if !laneSupported || raceBuild {
		t.Skip("no lanes here")
	}
	impl := &laneBase{}
	c := dialLane(t, impl)
	ctx := context.Background()
	before := laneCalls.Load()
	for i := 1; i <= 3; i++ {
		info, err := c.Info(ctx)
		if err != nil || info.Name != fmt.Sprintf("call %d", i) {
			t.Fatalf("Info %d: %+v, %v", i, info, err)
		}
	}
	if err := c.Configure(ctx, plugin.Setup{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	err := c.Configure(ctx, plugin.Setup{Seed: 7})
	if !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Fatalf("Configure(seed 7) = %v, want ErrInvalidConfig", err)
	}
	if n := laneCalls.Load() - before; n != 5 {
		t.Fatalf("%d calls went through the lane, want 5", n)
	}
}

// A call made while the lane is busy goes over gRPC instead of waiting.
func TestLaneBusyFallsBack(t *testing.T) {
	if !laneSupported || raceBuild {
		t.Skip("no lanes here")
	}
	impl := &laneBase{}
	c := dialLane(t, impl)
	ctx := context.Background()
	if _, err := c.Info(ctx); err != nil { // opens the lane
		t.Fatal(err)
	}
	impl.block = make(chan struct{})
	done := make(chan error)
	go func() { done <- c.Configure(ctx, plugin.Setup{}) }()
	// Info answers while Configure holds the lane (or, if Info got there
	// first, before it): either way it does not wait for Configure.
	before := laneCalls.Load()
	if _, err := c.Info(ctx); err != nil {
		t.Fatal(err)
	}
	close(impl.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := laneCalls.Load() - before; n > 2 {
		t.Fatalf("%d lane calls for two calls", n)
	}
}

// A call whose context ends while the plugin works returns the context's
// error; the lane is given up and later calls answer over gRPC.
func TestLaneGivenUpOnCancel(t *testing.T) {
	if !laneSupported || raceBuild {
		t.Skip("no lanes here")
	}
	impl := &laneBase{}
	c := dialLane(t, impl)
	if _, err := c.Info(context.Background()); err != nil { // opens the lane
		t.Fatal(err)
	}
	impl.block = make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Configure(ctx, plugin.Setup{}); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Configure past its deadline: %v, want DeadlineExceeded", err)
	}
	close(impl.block)
	before := laneCalls.Load()
	info, err := c.Info(context.Background())
	if err != nil || info.Name == "" {
		t.Fatalf("Info after the lane was given up: %+v, %v", info, err)
	}
	if err := c.Configure(context.Background(), plugin.Setup{}); err != nil {
		t.Fatal(err)
	}
	// The abandoned Configure still finishes on the lane; nothing else may.
	if n := laneCalls.Load() - before; n > 1 {
		t.Fatalf("%d calls on a lane given up", n)
	}
}

// A call in flight when the connection closes fails at once, as a gRPC
// call would, instead of waiting for a handler that may never answer (the
// plugin's process lives on); the handler's late answer is dropped.
func TestLaneCallEndsOnClose(t *testing.T) {
	if !laneSupported || raceBuild {
		t.Skip("no lanes here")
	}
	impl := &laneBase{}
	client, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{"k": laneKind.Server(impl)})
	raw, err := client.Dispense("k")
	if err != nil {
		t.Fatal(err)
	}
	c := raw.(plugin.Base)
	ctx := context.Background()
	if _, err := c.Info(ctx); err != nil { // opens the lane
		t.Fatal(err)
	}
	impl.block, impl.entered = make(chan struct{}), make(chan struct{})
	defer close(impl.block)
	done := make(chan error, 1)
	go func() { done <- c.Configure(ctx, plugin.Setup{}) }()
	<-impl.entered
	client.Close()
	select {
	case err := <-done:
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("Configure after the close: %v, want Unavailable", err)
		}
	case <-time.After(30 * time.Second): // a hang guard, not a timing check
		t.Fatal("a lane call still waits 30 s after its connection closed")
	}
}
