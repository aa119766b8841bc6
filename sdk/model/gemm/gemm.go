// Package gemm owns the dense single-precision matrix product that model
// plugins run in their forward and backward passes: C = op(A)·op(B) or
// C += op(A)·op(B), row-major, with either operand transposed.
//
// Every element of C is one chain of fused multiply-adds (each rounded
// once, as IEEE 754's fusedMultiplyAdd) over k in ascending order, starting
// from C's old value when accumulating, from the column's bias in
// SgemmBias, and from +0 otherwise. Work is split
// across goroutines only by rows or columns of C, never across k, and the
// cache blocking only decides when a partial sum passes through memory (a
// float32 either way), so the result depends on the operands alone: not on
// GOMAXPROCS, the number of goroutines, the blocking or the machine. On
// amd64 with AVX2 and FMA a Go-assembly 6×16 micro-kernel runs the chains;
// elsewhere (or with the purego build tag) a pure-Go kernel computes the
// same correctly rounded fused operation in float64 and returns the same
// bits, more slowly.
//
// It imports only the standard library and golang.org/x/sys/cpu; it must
// not import framework/ or any plugin.
package gemm

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Micro-tile and cache-block sizes. mr×nr is the register tile of the
// assembly kernel (12 YMM accumulators); kc floats of a packed nr-column
// panel stay in L1, an mc×kc packed block of A in L2.
const (
	mr = 6
	nr = 16
	kc = 256
	mc = 96
	nc = 1024
)

// parallelFLOPs is the product size from which a call uses more than one
// goroutine: below it the goroutines' start-up costs more than they save.
const parallelFLOPs = 1 << 22

// Kernel names the micro-kernel this process runs: "avx2-fma" or "go".
func Kernel() string {
	if useAsm {
		return "avx2-fma"
	}
	return "go"
}

// DefaultThreads is Sgemm's goroutine budget: the CPUs this process may
// run on, at most GOMAXPROCS (sdk/plugin.Parallelism's rule, repeated here
// because this package imports only the standard library). A process that
// raises GOMAXPROCS above its cores would otherwise split each product
// into more goroutines than the cores can run at once.
func DefaultThreads() int {
	return max(1, min(runtime.NumCPU(), runtime.GOMAXPROCS(0)))
}

// Sgemm computes C = op(A)·op(B), or C += op(A)·op(B) when acc is true,
// where op(A) is m×k and op(B) is k×n. A is stored row-major with row
// stride lda: m×k when transA is false, k×m when it is true; likewise B is
// k×n (transB false) or n×k (transB true) with stride ldb, and C is m×n
// with stride ldc. Large products are split by row blocks of C across up
// to DefaultThreads goroutines.
func Sgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
	SgemmThreads(DefaultThreads(), transA, transB, m, n, k, a, lda, b, ldb, acc, c, ldc)
}

// SgemmThreads is Sgemm with at most threads goroutines (1 runs in the
// caller's). The result is the same for every threads.
func SgemmThreads(threads int, transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
	p := problem{transA: transA, transB: transB, a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc, k: k, acc: acc}
	p.solve(threads, m, n)
}

// SgemmBias computes C = act(bias + op(A)·op(B)) with at most threads
// goroutines: every element's chain of fused multiply-adds starts from
// bias[j] (len(bias) ≥ n) instead of +0, and with relu every element < 0
// is stored as +0. It is a fully connected layer's forward, y = x·Wᵀ + b
// then ReLU, with the bias and the ReLU done in the kernel's load and
// store instead of passes over C, and the same bits as copying bias into
// every row of C, SgemmThreads with acc, then ReLU.
func SgemmBias(threads int, transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, bias []float32, relu bool, c []float32, ldc int) {
	p := problem{transA: transA, transB: transB, a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc, k: k, bias: bias[:n], relu: relu}
	p.solve(threads, m, n)
}

// solve runs p on up to threads goroutines.
func (p problem) solve(threads, m, n int) {
	if m <= 0 || n <= 0 {
		return
	}
	if p.k <= 0 {
		for i := range m {
			row := p.c[i*p.ldc : i*p.ldc+n]
			switch {
			case p.bias != nil:
				copy(row, p.bias)
			case !p.acc:
				clear(row)
			}
			if p.relu {
				ReLU(row)
			}
		}
		return
	}
	if p.thin(m, n) || p.rank1(m, n) {
		return
	}
	p.directA = direct(m, n, p.k)
	// With at most three row panels each packed panel of B would be read
	// at most three times: packing it costs as much as the tiles.
	p.directB = !p.transB && m <= 11*mr && directMode == 0
	if w := workers(threads, m, n, p.k); w > 1 {
		// The goroutines share the problem on the heap; the one-goroutine
		// path keeps it on the stack, so it allocates nothing.
		shared := p
		shared.parallel(m, n, w)
		return
	}
	p.run(0, m, 0, n)
}

// workers is how many goroutines a product of this size uses: at most one
// per mr-row panel of C (rowBlock splits the rows).
func workers(threads, m, n, k int) int {
	if threads <= 1 || 2*int64(m)*int64(n)*int64(k) < parallelFLOPs {
		return 1
	}
	return min(threads, (m+mr-1)/mr)
}

// directMode, when not zero, overrides direct's choice (tests and
// benchmarks): 1 packs A, 2 reads it in place.
var directMode int

// direct chooses to read op(A) in place (problem.directA) where packing it
// costs more than it saves: packing touches every element of A once per
// column block, and pays off only when the packed panels are read again for
// many nr-column panels of B and A is too large to stay in the L2 cache
// (1 MiB a core here) between them. Below k = 8 packing is cheap and the
// plain kernel's shorter set-up wins.
func direct(m, n, k int) bool {
	switch directMode {
	case 1:
		return false
	case 2:
		return true
	}
	panels := (n + nr - 1) / nr
	return k >= 8 && (panels <= 2 || m*k <= 1<<16)
}

// problem is one call's operands.
type problem struct {
	transA, transB bool
	a, b, c        []float32
	lda, ldb, ldc  int
	k              int
	acc            bool
	// directA reads op(A)'s whole mr-row panels in place instead of
	// packing them. Only which memory the kernel reads changes, never a
	// chain, so the bits are the same either way.
	directA bool
	// directB reads op(B)'s whole nr-column panels in place (B not
	// transposed, its k rows at stride ldb) instead of packing them.
	directB bool
	// bias, when not nil, starts column j's chains from bias[j] (the first
	// k block loads it instead of C); relu stores ReLU of the last k
	// block's results.
	bias []float32
	relu bool
}

// buffers are one goroutine's packed panels, pooled so that a training
// loop allocates nothing per batch once warm.
type buffers struct {
	a, b []float32
	tile [mr * nr]float32
}

var pool = sync.Pool{New: func() any {
	return &buffers{a: make([]float32, mc*kc), b: make([]float32, kc*nc)}
}}

// run computes C[i0:i1, j0:j1], GotoBLAS's loop nest: column blocks of nc,
// k blocks of kc (B packed once per block), row blocks of mc (A packed),
// then the register tiles.
func (p *problem) run(i0, i1, j0, j1 int) {
	buf := pool.Get().(*buffers)
	defer pool.Put(buf)
	for jc := j0; jc < j1; jc += nc {
		ncb := min(nc, j1-jc)
		for pc := 0; pc < p.k; pc += kc {
			kcb := min(kc, p.k-pc)
			p.packB(buf.b, pc, kcb, jc, ncb)
			load := p.acc || pc > 0
			for ic := i0; ic < i1; ic += mc {
				mcb := min(mc, i1-ic)
				p.packA(buf.a, ic, mcb, pc, kcb)
				p.tiles(buf, buf.b, ic, mcb, jc, ncb, pc, kcb, load)
			}
		}
	}
}

// parallel computes all of C with w goroutines. For each block of B the
// goroutines first pack its nr-column panels, taken from a counter, into
// one shared buffer, and once every panel is packed take row blocks of C
// from a second counter as they free up: a core slowed by other work packs
// and computes less instead of holding the rest up, and a goroutine that
// starts late finds the panels packed. Which goroutine packs a panel or
// computes a block changes nothing in its bits.
func (p *problem) parallel(m, n, w int) {
	own := pool.Get().(*buffers)
	defer pool.Put(own)
	bm := rowBlock(m, w)
	blocks := (m + bm - 1) / bm
	for jc := 0; jc < n; jc += nc {
		ncb := min(nc, n-jc)
		panels := (ncb + nr - 1) / nr
		for pc := 0; pc < p.k; pc += kc {
			kcb := min(kc, p.k-pc)
			load := p.acc || pc > 0
			var nextPanel, nextBlock atomic.Int64
			var packed sync.WaitGroup
			packed.Add(panels)
			work := func(buf *buffers) {
				for jp := int(nextPanel.Add(1) - 1); jp < panels; jp = int(nextPanel.Add(1) - 1) {
					p.packB(own.b[jp*nr*kcb:], pc, kcb, jc+jp*nr, min(nr, ncb-jp*nr))
					packed.Done()
				}
				packed.Wait()
				for ib := int(nextBlock.Add(1) - 1); ib < blocks; ib = int(nextBlock.Add(1) - 1) {
					ic := ib * bm
					mcb := min(bm, m-ic)
					p.packA(buf.a, ic, mcb, pc, kcb)
					p.tiles(buf, own.b, ic, mcb, jc, ncb, pc, kcb, load)
				}
			}
			var wg sync.WaitGroup
			for range w - 1 {
				wg.Go(func() {
					buf := pool.Get().(*buffers)
					defer pool.Put(buf)
					work(buf)
				})
			}
			work(own)
			wg.Wait()
		}
	}
}

// rowBlock is the parallel path's row block: at most mc rows, a multiple
// of mr, and as even a split as that allows into a multiple of w blocks
// when there are few (128 rows on 2 goroutines: 64 and 64, not 96 and 32).
func rowBlock(m, w int) int {
	blocks := (m + mc - 1) / mc
	if blocks < 4*w {
		blocks = (blocks + w - 1) / w * w
	}
	rows := (m + blocks - 1) / blocks
	return min(mc, (rows+mr-1)/mr*mr)
}

// tiles runs the micro-kernel over one mcb×kcb block of op(A) (from row
// ic, k pc; whole panels read in place when directA, the others packed in
// buf.a) and a packed kcb×ncb block of op(B) (from column jc). A partial edge tile goes through buf.tile, a full mr×nr tile in
// which only the edge's elements are read and written back.
func (p *problem) tiles(buf *buffers, packedB []float32, ic, mcb, jc, ncb, pc, kcb int, load bool) {
	flags := 0
	if load {
		flags = loadC
	}
	bias := p.bias != nil && pc == 0
	if bias {
		flags = loadC
	}
	if p.relu && pc+kcb == p.k {
		flags |= storeReLU
	}
	for jr := 0; jr < ncb; jr += nr {
		cols := min(nr, ncb-jr)
		bp, bs := packedB[jr*kcb:(jr+nr)*kcb], nr
		if p.inPlaceB(pc, kcb, jc+jr) {
			bp, bs = p.b[pc*p.ldb+jc+jr:], p.ldb
		}
		for ir := 0; ir < mcb; ir += mr {
			rows, skip := min(mr, mcb-ir), 0
			ap, rs, ks := buf.a[ir*kcb:(ir+mr)*kcb], 1, mr
			switch {
			case p.directA && rows == mr:
				ap, rs, ks = p.panelA(ic+ir, pc)
			case p.directA && mcb >= mr:
				// A partial last panel runs as the whole panel ending at
				// the block's last row, in place, through buf.tile; its
				// first skip rows (done already) are not written back.
				skip = mr - rows
				ap, rs, ks = p.panelA(ic+ir-skip, pc)
			}
			at := (ic+ir-skip)*p.ldc + jc + jr
			if rows == mr && cols == nr {
				c := p.c[at : at+(mr-1)*p.ldc+nr]
				cin, ldin := c, p.ldc
				if bias {
					cin, ldin = p.bias[jc+jr:jc+jr+nr], 0
				}
				micro(kcb, ap, rs, ks, bp, bs, c, p.ldc, cin, ldin, flags)
				continue
			}
			t := buf.tile[:]
			switch {
			case bias:
				for r := range rows + skip {
					copy(t[r*nr:r*nr+cols], p.bias[jc+jr:jc+jr+cols])
				}
			case load:
				for r := range rows + skip {
					copy(t[r*nr:r*nr+cols], p.c[at+r*p.ldc:at+r*p.ldc+cols])
				}
			}
			micro(kcb, ap, rs, ks, bp, bs, t, nr, t, nr, flags)
			for r := skip; r < rows+skip; r++ {
				copy(p.c[at+r*p.ldc:at+r*p.ldc+cols], t[r*nr:r*nr+cols])
			}
		}
	}
}

// panelA is op(A)'s mr rows from row i and k p0 in place: the slice and
// the strides of a row and of a k step.
func (p *problem) panelA(i, p0 int) (a []float32, rs, ks int) {
	if p.transA {
		return p.a[p0*p.lda+i:], 1, p.lda
	}
	return p.a[i*p.lda+p0:], p.lda, 1
}

// micro runs one register tile on a panel of B (packed when bs = nr, in
// place otherwise): the packed kernel when A's panel and B's are packed
// and the tile starts from C or +0 with no ReLU, the strided one
// otherwise (the same chains).
func micro(k int, a []float32, rs, ks int, b []float32, bs int, c []float32, ldc int, cin []float32, ldin int, flags int) {
	if rs == 1 && ks == mr && bs == nr && flags&storeReLU == 0 && (flags == 0 || ldin == ldc && &cin[0] == &c[0]) {
		kernel(k, a, b, c, ldc, flags&loadC != 0)
		return
	}
	kernelS(k, a, rs, ks, b, bs, c, ldc, cin, ldin, flags)
}

// packA writes op(A)[i0:i0+rows, p0:p0+kcb] into dst as panels of mr rows,
// each k-major (mr floats per k), the rows past the edge zero.
func (p *problem) packA(dst []float32, i0, rows, p0, kcb int) {
	for ir := 0; ir < rows; ir += mr {
		panel := dst[ir*kcb : (ir+mr)*kcb]
		n := min(mr, rows-ir)
		if p.directA && (n == mr || rows >= mr) {
			continue // read in place by tiles
		}
		if n < mr {
			clear(panel)
		}
		if p.transA {
			// op(A)'s column is A's row: mr contiguous floats per k.
			for q := range kcb {
				at := (p0+q)*p.lda + i0 + ir
				if n == mr {
					// An array copy: a few moves, no memmove call.
					*(*[mr]float32)(panel[q*mr:]) = *(*[mr]float32)(p.a[at:])
					continue
				}
				copy(panel[q*mr:q*mr+n], p.a[at:at+n])
			}
			continue
		}
		if n == mr {
			p.packAFull(panel, i0+ir, p0, kcb)
			continue
		}
		for r := range n {
			i := i0 + ir + r
			row := p.a[i*p.lda+p0 : i*p.lda+p0+kcb]
			for q, v := range row {
				panel[q*mr+r] = v
			}
		}
	}
}

// packAFull packs one whole panel of mr rows of an untransposed A, the six
// rows read side by side so that the panel is written in order.
func (p *problem) packAFull(panel []float32, i, p0, kcb int) {
	at := i*p.lda + p0
	r0 := p.a[at : at+kcb]
	r1 := p.a[at+p.lda : at+p.lda+kcb]
	r2 := p.a[at+2*p.lda : at+2*p.lda+kcb]
	r3 := p.a[at+3*p.lda : at+3*p.lda+kcb]
	r4 := p.a[at+4*p.lda : at+4*p.lda+kcb]
	r5 := p.a[at+5*p.lda : at+5*p.lda+kcb]
	panel = panel[:kcb*mr]
	for q := range kcb {
		d := panel[q*mr : q*mr+mr : q*mr+mr]
		d[0], d[1], d[2], d[3], d[4], d[5] = r0[q], r1[q], r2[q], r3[q], r4[q], r5[q]
	}
}

// inPlaceB reports whether tiles read op(B)'s nr-column panel from column
// j, k p0 to p0+kcb-1, in place: with directB, where its 16-float rows lie
// within B. A partial panel's rows then run into the next row of B (or
// its slack); those lanes' chains are computed and never stored.
func (p *problem) inPlaceB(p0, kcb, j int) bool {
	return p.directB && (p0+kcb-1)*p.ldb+j+nr <= len(p.b)
}

// packB writes op(B)[p0:p0+kcb, j0:j0+cols] into dst as panels of nr
// columns, each k-major (nr floats per k), the columns past the edge zero.
func (p *problem) packB(dst []float32, p0, kcb, j0, cols int) {
	for jr := 0; jr < cols; jr += nr {
		panel := dst[jr*kcb : (jr+nr)*kcb]
		n := min(nr, cols-jr)
		if p.inPlaceB(p0, kcb, j0+jr) {
			continue // read in place by tiles
		}
		if n < nr {
			clear(panel)
		}
		if !p.transB {
			for q := range kcb {
				at := (p0+q)*p.ldb + j0 + jr
				if n == nr {
					*(*[nr]float32)(panel[q*nr:]) = *(*[nr]float32)(p.b[at:])
					continue
				}
				copy(panel[q*nr:q*nr+n], p.b[at:at+n])
			}
			continue
		}
		for c := range n {
			at := (j0+jr+c)*p.ldb + p0
			for q, v := range p.b[at : at+kcb] {
				panel[q*nr+c] = v
			}
		}
	}
}
