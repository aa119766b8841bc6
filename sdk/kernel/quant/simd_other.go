//go:build !amd64 || purego

package quant

// useF16C is false off amd64: the pure-Go loops run.
const (
	useF16C   = false
	useAVX512 = false
)

func dequantNAVX2(*float32, *byte, int, float32, float32, int, bool)      { panic("no AVX2") }
func quantNAVX2(*byte, *float32, int, float32, float32, int)              { panic("no AVX2") }
func minMaxAVX2(*float32, int) (float32, float32)                         { panic("no AVX2") }
func fromFP16AVX2(*float32, *uint16, int, bool) int                       { panic("no AVX2") }
func toFP16AVX2(*uint16, *float32, int)                                   { panic("no AVX2") }
func drawsAVX512(*uint32, *uint64, int)                                   { panic("no AVX-512") }
func drawsAVX2(*uint32, *uint64, int)                                     { panic("no AVX2") }
func quantStochAVX2(*byte, *float32, *uint32, int, float32, float32, int) { panic("no AVX2") }
func toFP16StochAVX2(*uint16, *float32, *uint32, int) int                 { panic("no AVX2") }
