//go:build cgo && amd64

// Package cgather runs the C reference gather-reduce (gather_kernel.h,
// AVX2 with prefetch, the kernel bench/c/gather.c times on its own) from Go,
// so that a benchmark can time it and flowrun's kernel alternately, call by
// call, on the same tables in the same process: the fairest comparison on a
// machine whose load and memory placement drift between runs. It is a
// benchmarking aid, not part of flowrun.
package cgather

/*
#cgo CFLAGS: -O3 -mavx2
#cgo LDFLAGS: -lpthread
#include <stdlib.h>
#include "gather_kernel.h"

static void gather_go(float **data, int64_t **ix, int64_t **off, float **out,
                      int tables, int batch, int dim, int64_t stride, int pf, int threads) {
	gather_job j = {(const float *const *)data, (const int64_t *const *)ix, (const int64_t *const *)off, out,
	                tables, batch, dim, pf, threads, stride};
	gather_run(&j);
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Job is a gather-reduce over tables, laid out as the C kernel wants it.
// Its slices must not be Go heap memory the C code keeps (they are region
// memory in the benchmark); the pointer arrays are C memory.
type Job struct {
	data, ix, off, out unsafe.Pointer // C arrays of pointers
	tables, batch, dim int
	stride             int64
	Prefetch, Threads  int
}

// NewJob describes a batch: table t's rows (stride floats apart), its
// indices and its batch+1 bag offsets, and its [batch][dim] output. dim
// must be a multiple of 64. The slices must outlive the Job and not be
// Go-heap memory (regions are mmapped).
func NewJob(data [][]float32, stride int, ix, off [][]int64, out [][]float32, batch, dim int) (*Job, error) {
	if dim%64 != 0 || dim <= 0 {
		return nil, fmt.Errorf("cgather: dim %d is not a positive multiple of 64", dim)
	}
	n := len(data)
	j := &Job{tables: n, batch: batch, dim: dim, stride: int64(stride), Prefetch: 12, Threads: 1}
	ptrs := func(f func(t int) unsafe.Pointer) unsafe.Pointer {
		p := C.malloc(C.size_t(8 * n))
		s := unsafe.Slice((*unsafe.Pointer)(p), n)
		for t := range n {
			s[t] = f(t)
		}
		return p
	}
	j.data = ptrs(func(t int) unsafe.Pointer { return unsafe.Pointer(&data[t][0]) })
	j.ix = ptrs(func(t int) unsafe.Pointer { return unsafe.Pointer(&ix[t][0]) })
	j.off = ptrs(func(t int) unsafe.Pointer { return unsafe.Pointer(&off[t][0]) })
	j.out = ptrs(func(t int) unsafe.Pointer { return unsafe.Pointer(&out[t][0]) })
	return j, nil
}

// Run runs the job once.
func (j *Job) Run() {
	C.gather_go((**C.float)(j.data), (**C.int64_t)(j.ix), (**C.int64_t)(j.off), (**C.float)(j.out),
		C.int(j.tables), C.int(j.batch), C.int(j.dim), C.int64_t(j.stride), C.int(j.Prefetch), C.int(j.Threads))
}

// Free releases the job's C memory.
func (j *Job) Free() {
	for _, p := range []unsafe.Pointer{j.data, j.ix, j.off, j.out} {
		C.free(p)
	}
}
