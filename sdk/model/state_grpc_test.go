package model_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/model/modeltest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// stater is a mock model that keeps a state.
type stater struct {
	modeltest.Mock
	state []byte
}

func (s *stater) State(context.Context) ([]byte, error) { return bytes.Clone(s.state), nil }
func (s *stater) SetState(_ context.Context, b []byte) error {
	if len(b) == 0 {
		return model.ErrBadState
	}
	s.state = bytes.Clone(b)
	return nil
}

func overGRPC(t *testing.T, impl model.Model) model.Model {
	t.Helper()
	return plugintest.InProcess(t, plugin.KindModel, model.ServerPlugin(impl)).(model.Model)
}

// TestStateOverGRPC: a state of any size (a small one in the message, a
// 6 MiB one, past gRPC's 4 MiB, through a region) goes both ways
// unchanged; a model that keeps no state answers plugin.ErrUnsupported.
func TestStateOverGRPC(t *testing.T) {
	ctx := context.Background()
	impl := &stater{state: []byte("dense")}
	m := overGRPC(t, impl)
	got, err := model.StateOf(ctx, m)
	if err != nil || string(got) != "dense" {
		t.Fatalf("State = %q, %v", got, err)
	}
	big := make([]byte, 6<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	for _, want := range [][]byte{[]byte("small"), big} {
		if err := model.SetStateOf(ctx, m, want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(impl.state, want) {
			t.Fatalf("SetState of %d bytes arrived as %d bytes", len(want), len(impl.state))
		}
		got, err := model.StateOf(ctx, m)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("State of %d bytes came back as %d bytes, %v", len(want), len(got), err)
		}
	}
	if err := model.SetStateOf(ctx, m, nil); err == nil {
		t.Fatalf("a bad state: %v", err)
	}
	plain := overGRPC(t, &modeltest.Mock{})
	if _, err := model.StateOf(ctx, plain); !errors.Is(err, plugin.ErrUnsupported) {
		t.Fatalf("State of a model without state: %v, want ErrUnsupported", err)
	}
	if err := model.SetStateOf(ctx, plain, []byte("x")); !errors.Is(err, plugin.ErrUnsupported) {
		t.Fatalf("SetState of a model without state: %v, want ErrUnsupported", err)
	}
}
