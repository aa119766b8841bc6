// Package shm is what is left of the built-in plugins' request checks
// since they moved into the SDK (sdk/region/checked, model.StepRequest.View
// and the kernel requests' View): Int64s, for the one caller not yet on
// checked.Int64s. A plugin author uses sdk/region/checked instead.
//
// It imports nothing from framework/ (plugins see flowrun through sdk/
// alone).
package shm

import (
	"github.com/flowrun/flowrun/sdk/region"
	"github.com/flowrun/flowrun/sdk/region/checked"
)

// Int64s returns the first n int64s of ref: checked.Int64s.
func Int64s(m *region.Mapper, ref region.Ref, n int64, what string) ([]int64, error) {
	return checked.Int64s(m, ref, n, what)
}
