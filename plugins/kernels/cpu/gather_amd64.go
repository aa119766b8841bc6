//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// haveAVX2 reports whether the AVX2 gather-reduce can run here (the OS
// saves the YMM registers, which x/sys/cpu checks through OSXSAVE).
var haveAVX2 = cpu.X86.HasAVX2

// poolBagAVX2 is implemented in gather_amd64.s.
//
//go:noescape
func poolBagAVX2(out *float32, data *float32, bag *int64, n int, pf *int64, npf int, cols int, stride int, lines int, div float32)

// applyAVX2 is implemented in optim_amd64.s.
//
//go:noescape
func applyAVX2(opt int, data *float32, rows *int64, n int, npf int, grads *float32, cols int, stride int, lines int, lr float32, eps float32)
