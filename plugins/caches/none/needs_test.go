package none

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// No cache never evicts, so it holds every window.
func TestNeeds(t *testing.T) {
	got, err := New().(cache.Declarer).Needs(context.Background(), plugin.Setup{Options: json.RawMessage(`{"capacity": 0, "past": 3}`)})
	if err != nil || got != (cache.Needs{HoldsWindows: true}) {
		t.Fatalf("Needs = %+v, %v; want HoldsWindows", got, err)
	}
	_, err = New().(cache.Declarer).Needs(context.Background(), plugin.Setup{Options: json.RawMessage(`{"capacity": -1}`)})
	if key, _ := plugin.FieldOf(err); key != "capacity" {
		t.Fatalf("capacity -1: %v, want a FieldError for capacity", err)
	}
}
