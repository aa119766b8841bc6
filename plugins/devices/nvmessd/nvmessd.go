// Package nvmessd is the "nvme-ssd" device: a datacenter NVMe SSD holding
// embedding tables below host DRAM (the disk tier of HugeCTR's SSD
// parameter server and RecPipe's SSD projection), priced by the shared
// cost model in sdk/device/costmodel. Every time it returns is modeled
// time on the profiled drive, never a measurement of the machine flowrun
// runs on; the tables a graph puts on disk (embedding.tables_dir) are
// measured separately (docs/benchmarks.md, "Disk tier").
package nvmessd

import (
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/costmodel"
)

// Name is the device's plugin name (builtin:nvme-ssd).
const Name = "nvme-ssd"

// The PM9A3's datasheet figures (U.2 and E1.S, PCIe 4.0 × 4).
const (
	// SeqReadGBps is the sequential read bandwidth.
	SeqReadGBps = 6.5
	// RandReadIOPS is the 4 KiB random read rate at high queue depth.
	RandReadIOPS = 900_000
	// PageBytes is the read unit of RandReadIOPS.
	PageBytes = 4096
	// ReadLatencyNs is a 4 KiB read at queue depth 1. Not a datasheet
	// figure: the typical order of a TLC NVMe drive's read latency,
	// assumed (a batch's operation waits about one device access).
	ReadLatencyNs = 100_000
)

// LinkGBps is the drive's link, PCIe 4.0 × 4: 16 GT/s × 4 lanes × 128/130
// encoding ÷ 8 bits.
const LinkGBps = 16 * 4 * 128.0 / 130 / 8

// RandReadGBps is the bandwidth of random 4 KiB reads: RandReadIOPS ×
// PageBytes, 3.69 GB/s. Rows are read at random, so the profile prices
// row bytes at this rate; a row smaller than a page still costs a page
// on a real drive, which the byte-linear model does not charge (rows
// gathered from one page share it only when they are adjacent).
const RandReadGBps = RandReadIOPS * PageBytes / 1e9

// Spec is the device: the PM9A3 profile, uncalibrated (no paper measures
// an SSD tier flowrun could fit). A drive has no arithmetic: a Compute op
// is refused (the host gathers the rows it reads).
func Spec() costmodel.Spec {
	return costmodel.Spec{Name: Name, Default: DefaultProfile,
		Description: "NVMe SSD cost model (default: Samsung PM9A3, 900K random 4 KiB read IOPS); all times are modeled",
		Profiles: map[string]costmodel.Params{
			"pm9a3": {Profile: device.Profile{
				Name:          "Samsung PM9A3 7.68 TB NVMe SSD (PCIe 4.0 × 4)",
				CapacityBytes: 7_680_000_000_000, BandwidthGBps: RandReadGBps, LatencyNs: ReadLatencyNs,
				Efficiency: 1, LinkGBps: LinkGBps,
				Source: "Samsung PM9A3 announcement (OCP Virtual Summit, May 2020; computerbase.de/2020-05/samsung-pm9a3-e1.s-pcie-4.0-ssd): " +
					"6.5 GB/s sequential and 900,000 IOPS random read (U.2, E1.S); bandwidth derived as 900K × 4 KiB; " +
					"latency assumed (100 µs, typical TLC NVMe at queue depth 1); not calibrated",
			}},
		}}
}

// DefaultProfile is the key of the default profile.
const DefaultProfile = "pm9a3"

// New returns the device: costmodel over Spec.
func New() device.Device { return costmodel.New(Spec()) }
