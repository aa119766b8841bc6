package cast

// Config is the cast stage's options.
type Config struct {
	// Device names the device that casts (Tensor Casting runs it on the
	// GPU, overlapped with the forward pass); its modeled time for reading
	// the index pairs, sorting them and writing the casted arrays is
	// charged to it. Empty charges nothing.
	Device string `mapstructure:"device"`
	// Transfer charges, on Device's link, the copy of the batch's index
	// (IDs and offsets) to Device and of the casted arrays back: Sec.
	// IV-B, "our runtime system copies the original (src, dst) index
	// array to the GPU over PCIe and utilize the GPU to proactively
	// initiate the casting step". Set it false where Device already holds
	// the index (a host that casts).
	Transfer bool `mapstructure:"transfer"`
}

// Validate has nothing to check: the graph checks that Device is one of
// its devices.
func (c *Config) Validate() error { return nil }

// DeviceNames lists the devices the stage uses, for the graph's checks.
func (c *Config) DeviceNames() []string {
	if c.Device == "" {
		return nil
	}
	return []string{c.Device}
}
