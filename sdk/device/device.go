// Package device is the SDK for device plugins: a memory tier or processor
// (CPU DRAM, HBM, an NMP DIMM pool, an accelerator) and the link into it,
// described by a cost model. flowrun runs every operation for real on the
// host; a device says how long that operation would take on the hardware it
// models. Every figure a device returns is modeled time and must be
// reported as such.
package device

import (
	"context"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// OpKind is the class of an operation, which picks the cost-model term.
type OpKind int32

const (
	// Read streams bytes from the device's memory.
	Read OpKind = iota
	// Write streams bytes into the device's memory.
	Write
	// Compute is arithmetic on the device (FLOPs).
	Compute
	// Transfer moves bytes over the device's link.
	Transfer
)

// Op is one operation of a batch.
type Op struct {
	Name  string
	Kind  OpKind
	Bytes int64
	FLOPs int64
}

// Profile is a device's cost model, with where its figures come from.
type Profile struct {
	Name string
	// CapacityBytes is the memory the device offers (0: unlimited).
	CapacityBytes int64
	// BandwidthGBps is peak memory bandwidth, GB/s (1e9 bytes).
	BandwidthGBps float64
	// LinkGBps is the bandwidth of the link into the device, GB/s.
	LinkGBps float64
	// LatencyNs is a fixed cost per operation.
	LatencyNs float64
	// GFLOPS is peak arithmetic throughput.
	GFLOPS float64
	// Efficiency scales peak figures to sustained ones (0 < e ≤ 1).
	Efficiency float64
	// Source cites where the figures come from.
	Source string
}

// CostRequest asks for the modeled time of a batch's operations.
type CostRequest struct {
	Seq uint64
	Ops []Op
}

// CostResult has the modeled nanoseconds of each op, in request order.
type CostResult struct {
	ModeledNs []int64
}

// Device is a cost-modeled device.
type Device interface {
	plugin.Base
	Profile(ctx context.Context) (Profile, error)
	Cost(ctx context.Context, req *CostRequest) (*CostResult, error)
}
