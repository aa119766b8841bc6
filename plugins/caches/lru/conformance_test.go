package lru_test

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/lru"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func TestConformance(t *testing.T) {
	cachetest.Run(t, func() cache.Cache { return lru.New() })
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/caches/lru/cmd/flowrun-cache-lru")
	cachetest.RunBinary(t, bin)
}
