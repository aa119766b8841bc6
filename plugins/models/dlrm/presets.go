package dlrm

import (
	"slices"
	"strings"
)

// Preset is the dense shape of one of the papers' models. The papers list
// MLPs as dash-separated widths; where a list starts with the input width
// (RecPipe's and MLPerf's "13-", Criteo's 13 dense features) that figure is
// dropped here, since the input is the run's dense_features. Tables, Lookups
// and Dim are the rest of the paper's model, for the README and for the
// error that names a preset whose bottom output does not match the run's
// embedding dim; the model takes tables and lookups from the run.
type Preset struct {
	Name string
	// BottomMLP and TopMLP are the layers' widths, first to last.
	BottomMLP, TopMLP []int
	// Dim is the embedding dim of the paper's model: BottomMLP's last width.
	Dim int
	// Tables and Lookups (gathers per table per sample) of the paper's
	// model; 0 where the paper does not fix them.
	Tables, Lookups int
	// Source says where the figures come from.
	Source string
}

// presets are every named shape, in the README's order.
var presets = []Preset{
	{
		Name: "scratchpipe", BottomMLP: []int{512, 256, 128}, TopMLP: []int{1024, 1024, 512, 256, 1},
		Dim: 128, Tables: 8, Lookups: 20,
		Source: "ScratchPipe Sec. V (8 tables × 10M rows × dim 128, 20 lookups, batch 2048; MLPs \"using DLRM MLPerf\"): MLPerf DLRM reference, bot 13-512-256-128, top 1024-1024-512-256-1",
	},
	{
		Name: "rm1", BottomMLP: []int{256, 128, 64}, TopMLP: []int{256, 64, 1},
		Dim: 64, Tables: 10, Lookups: 80,
		Source: "Tensor Casting Table II (dim 64 from Sec. V)",
	},
	{
		Name: "rm2", BottomMLP: []int{256, 128, 64}, TopMLP: []int{512, 128, 1},
		Dim: 64, Tables: 40, Lookups: 80,
		Source: "Tensor Casting Table II (dim 64 from Sec. V)",
	},
	{
		Name: "rm3", BottomMLP: []int{2560, 512, 64}, TopMLP: []int{512, 128, 1},
		Dim: 64, Tables: 10, Lookups: 20,
		Source: "Tensor Casting Table II (dim 64 from Sec. V)",
	},
	{
		Name: "rm4", BottomMLP: []int{2560, 1024, 64}, TopMLP: []int{2048, 2048, 1024, 1},
		Dim: 64, Tables: 10, Lookups: 20,
		Source: "Tensor Casting Table II (dim 64 from Sec. V)",
	},
	{
		Name: "rmsmall", BottomMLP: []int{64, 4}, TopMLP: []int{64, 1},
		Dim:    4,
		Source: "RecPipe Table 1 (bottom 13-64-4, top 64-1, dim 4)",
	},
	{
		Name: "rmmed", BottomMLP: []int{64, 16}, TopMLP: []int{64, 1},
		Dim:    16,
		Source: "RecPipe Table 1 (bottom 13-64-16, top 64-1, dim 16)",
	},
	{
		Name: "rmlarge", BottomMLP: []int{512, 256, 128, 64, 32}, TopMLP: []int{96, 1},
		Dim:    32,
		Source: "RecPipe Table 1 (bottom 13-512-256-128-64-32, top 96-1, dim 32)",
	},
	{
		Name: "small", BottomMLP: []int{64, 32, 0}, TopMLP: []int{128, 128, 64, 32, 1},
		Dim:    0,
		Source: "flowrun's own: the scratchpipe preset with every width divided by 8, its bottom MLP ending at the run's embedding dim (0 = any), for runs that finish in seconds",
	},
}

// lookupPreset finds a preset by name, ignoring case ("RMsmall" as the
// paper writes it, or "rmsmall").
func lookupPreset(name string) (Preset, bool) {
	for _, p := range presets {
		if strings.EqualFold(p.Name, name) {
			p.BottomMLP, p.TopMLP = slices.Clone(p.BottomMLP), slices.Clone(p.TopMLP)
			return p, true
		}
	}
	return Preset{}, false
}

func presetNames() []string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	return names
}

// Presets returns a copy of every named shape, for documentation and tests.
func Presets() []Preset {
	out := make([]Preset, 0, len(presets))
	for _, p := range presets {
		q, _ := lookupPreset(p.Name)
		out = append(out, q)
	}
	return out
}
