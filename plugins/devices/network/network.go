// Package network is the "network" device: an Ethernet link between
// hosts (the run's process and its table shards, or workers), priced by
// the shared cost model in sdk/device/costmodel. Every time it returns is
// modeled time on the profiled link, never a measurement of this
// machine's loopback: the bytes are the ones that really crossed NATS,
// the time is what they would take on the link.
package network

import (
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/device/costmodel"
)

// Name is the device's plugin name (builtin:network).
const Name = "network"

// TCPEfficiency is the share of an Ethernet line rate a bulk TCP stream
// carries as payload at the standard 1500-byte MTU: 1448 bytes of payload
// (MSS with TCP timestamps) per 1538 bytes on the wire (1500 + 14 header
// + 4 FCS + 8 preamble + 12 inter-frame gap). Derived, not measured.
const TCPEfficiency = 1448.0 / 1538

// LatencyNs is one message's latency across a top-of-rack switch with
// kernel TCP: assumed (the usual order of a same-rack round trip's half,
// software included), not a datasheet figure.
const LatencyNs = 25_000

// Spec is the device: 25 and 100 Gigabit Ethernet, uncalibrated (no paper
// measures flowrun's shard traffic). A link has no arithmetic.
func Spec() costmodel.Spec {
	link := func(name string, gbits float64, std string) costmodel.Params {
		gbps := gbits / 8 // GB/s per direction
		return costmodel.Params{Profile: device.Profile{
			Name: name, BandwidthGBps: gbps, LatencyNs: LatencyNs, Efficiency: TCPEfficiency, LinkGBps: gbps,
			Source: std + ": " + formatRate(gbits) + " per direction; payload efficiency 1448/1538 (TCP, MTU 1500) derived; " +
				"latency 25 µs assumed (same rack, kernel TCP); not calibrated",
		}}
	}
	return costmodel.Spec{Name: Name, Default: DefaultProfile,
		Description: "Ethernet link between hosts (default: 25 GbE); all times are modeled",
		Profiles: map[string]costmodel.Params{
			"25gbe":  link("25 Gigabit Ethernet", 25, "IEEE 802.3by (25GBASE-R)"),
			"100gbe": link("100 Gigabit Ethernet", 100, "IEEE 802.3bj/802.3cd (100GBASE-R)"),
		}}
}

func formatRate(gbits float64) string {
	if gbits == 100 {
		return "100 Gb/s"
	}
	return "25 Gb/s"
}

// DefaultProfile is the key of the default profile.
const DefaultProfile = "25gbe"

// New returns the device: costmodel over Spec.
func New() device.Device { return costmodel.New(Spec()) }
