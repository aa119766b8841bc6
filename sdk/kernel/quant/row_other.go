//go:build !amd64 || purego

package quant

// useAVX2 is false off amd64: the pure-Go loops run.
const useAVX2 = false

func dequant8AVX2(*float32, *byte, int, float32, float32, bool) { panic("no AVX2") }
func sfence()                                                   {}
func quant8AVX2(*byte, *float32, int, float32, float32)         { panic("no AVX2") }
