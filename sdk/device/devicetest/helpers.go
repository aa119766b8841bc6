package devicetest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/internal/plugintest"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// Configured configures d with options (a JSON object; "" for none) and
// returns it, failing t if Configure refuses them: the first line of a
// device's own unit tests.
func Configured(t testing.TB, d device.Device, options string) device.Device {
	t.Helper()
	return plugintest.Configured(t, d, plugin.Setup{Options: json.RawMessage(options)})
}

// ProfileOf returns d's profile, failing t on an error.
func ProfileOf(t testing.TB, d device.Device) device.Profile {
	t.Helper()
	p, err := d.Profile(context.Background())
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	return p
}

// Costs returns the modeled nanoseconds d charges for ops, in order,
// failing t on an error.
func Costs(t testing.TB, d device.Device, ops ...device.Op) []int64 {
	t.Helper()
	res, err := d.Cost(context.Background(), &device.CostRequest{Ops: ops})
	if err != nil {
		t.Fatalf("Cost: %v", err)
	}
	return res.ModeledNs
}
