//go:build !amd64 || purego

package gemm

const useAsm = false

func kernel(k int, a, b, c []float32, ldc int, load bool) {
	kernelGo(k, a, b, c, ldc, load)
}

func kernelS(k int, a []float32, rs, ks int, b []float32, bs int, c []float32, ldc int, cin []float32, ldin int, flags int) {
	kernelGoS(k, a, rs, ks, b, bs, c, ldc, cin, ldin, flags)
}

func addToAVX(dst, src *float32, n int)                { panic("unreachable") }
func reluAVX(x *float32, n int)                        { panic("unreachable") }
func addScaledAVX(y, x *float32, alpha float32, n int) { panic("unreachable") }
func dots4x8AVX(v, vt *float32, d int, out *float32)   { panic("unreachable") }
func reluGradAVX(dy, y *float32, n int)                { panic("unreachable") }

func gemvBlock(k int, a []float32, rs, ks int, v []float32, vs int, out []float32) {
	gemvGo(k, a, rs, ks, v, vs, out)
}

func outer(m, n int, a []float32, as int, b, c []float32, ldc int, cin []float32, ldin, flags int) {
	outerGo(m, n, a, as, b, c, ldc, cin, ldin, flags)
}
