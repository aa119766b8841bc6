//go:build !amd64 || purego

package cpu

const haveAVX2 = false

func poolBagAVX2(out *float32, data *float32, bag *int64, n int, pf *int64, npf int, cols int, stride int, lines int, div float32) {
	panic("cpu: AVX2 kernel on a machine without it")
}

func applyAVX2(opt int, data *float32, rows *int64, n int, npf int, grads *float32, cols int, stride int, lines int, lr float32, eps float32) {
	panic("cpu: AVX2 kernel on a machine without it")
}
