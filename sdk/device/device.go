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
	// Keys optionally lists the embedding rows a Read looks up, one per
	// lookup in lookup order, each a (table, row) key made by RowKey: what
	// a device with an embedding cache needs to measure the batch's hit
	// rate from the data's own locality. Devices without a cache ignore
	// it, and a caller that leaves it empty gets the device's documented
	// no-keys cost (Bytes alone). Added after the first release: older
	// callers and binaries never set or see it.
	Keys []uint64
	// Layers optionally describes a Compute op as the dense matrix
	// products it runs, in order: what a device whose time depends on the
	// shapes (a systolic array's tiling) needs beyond the FLOP count.
	// Devices that price FLOPs ignore it; empty, the device prices FLOPs.
	Layers []Layer
}

// Layer is one dense matrix product of a Compute op: an M×K activation
// matrix (M items or samples, K input features) times a K×N weight matrix
// (N output features), 2·M·K·N FLOPs.
type Layer struct {
	M, K, N int64
}

// FLOPs is the layer's multiply-add count times two.
func (l Layer) FLOPs() int64 { return 2 * l.M * l.K * l.N }

// rowBits is how many low bits of a RowKey hold the row: 2^40 rows per
// table, far beyond any table flowrun holds (Criteo's largest has 10 M).
const rowBits = 40

// RowKey is the key of row `row` of table `table` in Op.Keys.
func RowKey(table int, row int64) uint64 { return uint64(table)<<rowBits | uint64(row)&(1<<rowBits-1) }

// SplitRowKey is RowKey's inverse.
func SplitRowKey(key uint64) (table int, row int64) {
	return int(key >> rowBits), int64(key & (1<<rowBits - 1))
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
	// Servers is how many queries (or batches) the device serves at once,
	// each at the modeled time Cost returns: a CPU server's cores running
	// one single-threaded process each, an accelerator's independent
	// sub-arrays. 0 or 1: one at a time. A figure for a serving model's
	// multi-server queue; Cost itself prices one query on one server.
	Servers int32
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
