package pluginhost_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/pluginhost/internal/echo"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

func TestCheckSetup(t *testing.T) {
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "launched")
	// A "plugin binary" that leaves a mark if anything runs it.
	script := writeScript(t, "#!/bin/sh\ntouch "+marker+"\nexit 1\n")
	h := newHost(t, pluginhost.Settings{})
	good := plugin.Setup{Options: []byte(`{"capacity": 8}`)}
	bad := plugin.Setup{Options: []byte(`{"capacity": "eight", "colour": 1}`)}
	cases := []struct {
		kind    plugin.Kind
		ref     string
		setup   plugin.Setup
		wantErr string
	}{
		{plugin.KindCache, "builtin:echo", good, ""},
		{plugin.KindCache, "builtin:echo", bad, "invalid plugin configuration"},
		// Binaries are not launched: their options are not tried.
		{plugin.KindCache, echoBin, bad, ""},
		{plugin.KindCache, script, bad, ""},
		// What Check rejects, CheckSetup rejects the same way.
		{plugin.KindCache, "builtin:nope", good, "no such builtin"},
		{plugin.KindKernel, "builtin:echo", good, "no such builtin"},
		{plugin.KindCache, filepath.Join(t.TempDir(), "missing"), good, "no such file"},
	}
	for _, tc := range cases {
		err := h.CheckSetup(ctx, tc.kind, tc.ref, tc.setup)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("CheckSetup(%s, %q, %s) = %v", tc.kind, tc.ref, tc.setup.Options, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("CheckSetup(%s, %q, %s) = %v, want an error containing %q", tc.kind, tc.ref, tc.setup.Options, err, tc.wantErr)
		}
	}
	if err := h.CheckSetup(ctx, plugin.KindCache, "builtin:echo", bad); !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Errorf("bad options: %v, want the plugin's own ErrInvalidConfig", err)
	}
	if len(h.Processes()) != 0 {
		t.Errorf("CheckSetup launched %v", h.Processes())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("CheckSetup ran a plugin binary")
	}

	// The instance CheckSetup configured is not the one a run resolves.
	c, err := h.Cache(ctx, "builtin:echo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Plan(ctx, &cache.PlanRequest{Seq: 1}); !errors.Is(err, plugin.ErrNotConfigured) {
		t.Errorf("Plan on a fresh instance after CheckSetup: %v, want ErrNotConfigured", err)
	}
}

// closingCache is a builtin that holds something until closed.
type closingCache struct {
	cache.Cache
	closed *int
}

func (c closingCache) Close() error {
	*c.closed++
	return nil
}

func TestCheckSetupClosesWhatItConfigured(t *testing.T) {
	closed := 0
	h := newHost(t, pluginhost.Settings{Builtins: pluginhost.Builtins{Caches: map[string]func() cache.Cache{
		"closing": func() cache.Cache { return closingCache{Cache: echo.New(), closed: &closed} },
	}}})
	ctx := context.Background()
	for _, opts := range []string{`{"capacity": 8}`, `{"colour": 1}`} {
		closed = 0
		h.CheckSetup(ctx, plugin.KindCache, "builtin:closing", plugin.Setup{Options: []byte(opts)})
		if closed != 1 {
			t.Errorf("options %s: closed %d times, want once", opts, closed)
		}
	}
}
