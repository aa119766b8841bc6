package lfu_test

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/lfu"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func TestConformance(t *testing.T) {
	cachetest.Run(t, func() cache.Cache { return lfu.New() })
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/caches/lfu/cmd/flowrun-cache-lfu")
	cachetest.RunBinary(t, bin)
}
