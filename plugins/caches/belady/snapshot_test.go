package belady

import (
	"testing"

	"github.com/flowrun/flowrun/plugins/caches/internal/reftest"
	"github.com/flowrun/flowrun/sdk/cache"
)

func TestSnapshot(t *testing.T) {
	reftest.CheckSnapshot(t, func() cache.Cache { return New() }, `{"capacity":16,"future":2}`, 2)
}
