package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/results"
)

// crashError stands for the plugin host's *pluginhost.ExitError.
type crashError struct{}

func (crashError) Error() string { return `cache plugin "clock" exited unexpectedly (signal: killed)` }

func TestBlameCrash(t *testing.T) {
	t.Parallel()
	stageErr := &StageError{Stage: "plan/plan", Seq: 7, Err: errors.New("cache plan: error reading from server: EOF")}
	remote := []results.PluginUse{{Kind: "cache", Ref: "/bin/clock", Remote: true}}
	builtin := []results.PluginUse{{Kind: "cache", Ref: "builtin:lru"}}

	t.Run("CrashReported", func(t *testing.T) {
		t.Parallel()
		failures := make(chan error, 1)
		failures <- crashError{}
		err := blameCrash(stageErr, failures, remote)
		var se *StageError
		if !errors.As(err, &crashError{}) || !errors.As(err, &se) || se != stageErr {
			t.Fatalf("%v: want both the crash and the stage error", err)
		}
		if !strings.HasPrefix(err.Error(), crashError{}.Error()) || !strings.Contains(err.Error(), "plan/plan failed on batch 7") {
			t.Errorf("%q: want the crash first, then the stage and batch", err)
		}
	})
	t.Run("NoCrash", func(t *testing.T) {
		t.Parallel()
		if err := blameCrash(stageErr, make(chan error), remote); err != stageErr {
			t.Errorf("%v, want the stage error as it was", err)
		}
	})
	t.Run("BuiltinsOnly", func(t *testing.T) {
		t.Parallel()
		failures := make(chan error, 1)
		failures <- crashError{}
		if err := blameCrash(stageErr, failures, builtin); err != stageErr {
			t.Errorf("%v: a run without subprocesses waits for no crash", err)
		}
	})
	t.Run("NotAStageError", func(t *testing.T) {
		t.Parallel()
		other := errors.New("interrupted")
		failures := make(chan error, 1)
		failures <- crashError{}
		if err := blameCrash(other, failures, remote); err != other {
			t.Errorf("%v, want %v", err, other)
		}
	})
}
