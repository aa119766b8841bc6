package cachetest_test

import (
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/internal/testplugins"
)

func TestConformance(t *testing.T) {
	cachetest.Run(t, func() cache.Cache { return testplugins.NewLRU() })
}

func TestConformanceBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin binary")
	}
	bin := plugintest.Build(t, "github.com/flowrun/flowrun/sdk/internal/testplugins/cmd/testcache")
	cachetest.RunBinary(t, bin)
}
