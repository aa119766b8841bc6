package cachetest_test

import (
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/internal/testplugins"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func TestConformance(t *testing.T) {
	cachetest.Run(t, func() cache.Cache { return testplugins.NewLRU() })
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/sdk/internal/testplugins/cmd/testcache")
	cachetest.RunBinary(t, bin)
}
