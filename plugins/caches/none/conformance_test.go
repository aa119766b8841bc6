package none_test

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/none"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/cache/cachetest"
	"github.com/flowrun/flowrun/sdk/plugin/buildtest"
)

func TestConformance(t *testing.T) {
	cachetest.Run(t, func() cache.Cache { return none.New() })
}

func TestConformanceBinary(t *testing.T) {
	bin := buildtest.Binary(t, "github.com/flowrun/flowrun/plugins/caches/none/cmd/flowrun-cache-none")
	cachetest.RunBinary(t, bin)
}
