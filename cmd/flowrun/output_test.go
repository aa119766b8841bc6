package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/results"
)

// The terminal modes of `flowrun run` and `validate`: the summary, --json,
// --quiet, the progress bar (only on a terminal) and the exit codes.

// TestRunJSON checks that run --json prints the results on stdout, the same
// document --out writes, and nothing else.
func TestRunJSON(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.json")
	r := mustFlowrun(t, "run", demo, "--json", "--out", out)
	var printed results.Results
	if err := json.Unmarshal([]byte(r.stdout), &printed); err != nil {
		t.Fatalf("run --json: stdout is not one JSON document: %v\n%s", err, r.stdout)
	}
	file, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.stdout != string(file) {
		t.Errorf("run --json printed something other than the --out file")
	}
	if printed.Digest == "" || len(printed.Stages) == 0 {
		t.Errorf("run --json: results without digest or stages: %+v", printed)
	}
	if r.stderr != "" {
		t.Errorf("run --json wrote to stderr (not a terminal): %q", r.stderr)
	}
}

// TestRunQuiet checks that -q prints nothing at all on success and still
// writes --out.
func TestRunQuiet(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.json")
	r := mustFlowrun(t, "run", demo, "--quiet", "--out", out)
	if r.stdout != "" || r.stderr != "" {
		t.Errorf("run --quiet printed stdout %q, stderr %q", r.stdout, r.stderr)
	}
	if _, err := results.Read(out); err != nil {
		t.Errorf("run --quiet --out: %v", err)
	}
}

// TestRunJSONQuiet: the two modes contradict each other, a usage error.
func TestRunJSONQuiet(t *testing.T) {
	t.Parallel()
	r := flowrun(t, "run", demo, "--json", "--quiet")
	if exitCode(r.err) != exitUsage {
		t.Errorf("run --json --quiet: %v, want a usage error", r.err)
	}
}

// TestRunSummaryNoControlCharacters: off a terminal there is no progress
// bar, so the output is plain text a log or a pipe can keep.
func TestRunSummaryNoControlCharacters(t *testing.T) {
	t.Parallel()
	r := mustFlowrun(t, "run", demo)
	for _, s := range []string{r.stdout, r.stderr} {
		if strings.ContainsAny(s, "\r\x1b") {
			t.Errorf("output off a terminal has control characters: %q", s)
		}
	}
	for _, want := range []string{"stage ", "modeled share", "iteration ", "throughput ", "memory peak ", "digest "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestValidateJSON checks validate --json on a good and a bad graph.
func TestValidateJSON(t *testing.T) {
	t.Parallel()
	bad := filepath.Join("testdata", "bad", "bad_strings.yaml")
	r := flowrun(t, "validate", "--json", "testdata/good.yaml", bad)
	if exitCode(r.err) != exitUsage {
		t.Errorf("validate --json with a bad graph: %v, want a usage error", r.err)
	}
	if r.stderr != "" {
		t.Errorf("validate --json wrote to stderr: %q", r.stderr)
	}
	var got []validation
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("validate --json: %v\n%s", err, r.stdout)
	}
	if len(got) != 2 || !got[0].OK || len(got[0].Errors) != 0 || got[1].OK || len(got[1].Errors) == 0 {
		t.Fatalf("validate --json: %+v", got)
	}
	for _, e := range got[1].Errors {
		if e.File != bad || e.Line == 0 || e.Path == "" || e.Message == "" {
			t.Errorf("error not located: %+v", e)
		}
	}
}

func TestExitCode(t *testing.T) {
	plain := errors.New("boom")
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{plain, exitFailure},
		{usageError{plain}, exitUsage},
		{interruptedError{plain}, exitInterrupted},
		{interruptedError{usageError{plain}}, exitInterrupted},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%#v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestRunInterruptedExitCode sends SIGINT to a running flowrun binary: it
// stops, exits 130 and writes no results file.
func TestRunInterruptedExitCode(t *testing.T) {
	t.Parallel()
	bin := needBin(t, "flowrun")
	out := filepath.Join(t.TempDir(), "r.json")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", demo, "--set", "dataset.batches=1000000", "--out", out)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Long enough for the run to be under way; a signal during start-up
	// must give the same answer anyway.
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("flowrun still running 60s after SIGINT\n%s", stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Errorf("flowrun after SIGINT: %v, want exit code %d\n%s", err, exitInterrupted, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", stderr.String())
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an interrupted run left %s (%v)", out, err)
	}
}
