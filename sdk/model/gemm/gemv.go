package gemm

// The thin products: C a single column (n = 1, the logit layer's forward)
// or a single row (m = 1, its weight gradient). The 6×16 tile would leave
// 15 of its 16 columns (or 5 of its 6 rows) idle, so these run as a
// matrix-vector product vectorised across C's elements instead: each lane
// of an accumulator is one element's chain of fused multiply-adds over k
// in ascending order, from the same start as the tile's, so the bits are
// the contract's. Never across k: that would be a different sum.

// gemvMaxStride bounds the lane stride of a gathered block (its indices
// are int32).
const gemvMaxStride = 1 << 27

// thin runs p by gemv when C is one column or one row of at least 8
// elements and reports whether it did.
func (p *problem) thin(m, n int) bool {
	var lanes, rs, ks, vs, cs int
	var x, v []float32
	switch {
	case n == 1 && m >= 8:
		// Lane i is row i: op(A)'s row times op(B)'s only column.
		lanes, x, v, cs = m, p.a, p.b, p.ldc
		rs, ks = p.lda, 1
		if p.transA {
			rs, ks = 1, p.lda
		}
		vs = p.ldb
		if p.transB {
			vs = 1
		}
	case m == 1 && n >= 8:
		// Lane j is column j: op(A)'s only row times op(B)'s column.
		lanes, x, v, cs = n, p.b, p.a, 1
		rs, ks = 1, p.ldb
		if p.transB {
			rs, ks = p.ldb, 1
		}
		vs = 1
		if p.transA {
			vs = p.lda
		}
	default:
		return false
	}
	if rs >= gemvMaxStride {
		return false
	}
	// Lanes in blocks of 32 (rows whose k is contiguous are transposed
	// in registers by gemvBlock), the rest 8 at a time.
	var t [32]float32
	for l0 := 0; l0 < lanes; {
		g, from := 32, 0
		if lanes-l0 < 32 {
			g = 8
		}
		if lanes-l0 < 8 {
			// The last block overlaps the one before: its first lanes are
			// computed again but not stored (C may already hold them).
			from = 8 - (lanes - l0)
			l0 = lanes - 8
		}
		p.gemvStart(t[:g], l0, cs, n == 1)
		gemvBlock(p.k, x[l0*rs:], rs, ks, v, vs, t[:g])
		if p.relu {
			ReLU(t[:g])
		}
		for l := from; l < g; l++ {
			p.c[(l0+l)*cs] = t[l]
		}
		l0 += g
	}
	return true
}

// gemvStart loads the chains' starts of C's elements l0.. (stride cs):
// the bias (one value for a column, one per element for a row), C's old
// values, or +0.
func (p *problem) gemvStart(t []float32, l0, cs int, column bool) {
	switch {
	case p.bias != nil && column:
		for l := range t {
			t[l] = p.bias[0]
		}
	case p.bias != nil:
		copy(t, p.bias[l0:l0+len(t)])
	case p.acc:
		for l := range t {
			t[l] = p.c[(l0+l)*cs]
		}
	default:
		clear(t)
	}
}

// gemvGo is gemvBlock's portable form and its contract: for each lane l,
// out[l] = fma(a[l*rs+q*ks], v[q*vs], out[l]) for q = 0..k-1 in order.
func gemvGo(k int, a []float32, rs, ks int, v []float32, vs int, out []float32) {
	for l := range out {
		s := out[l]
		for q := range k {
			s = FMA32(a[l*rs+q*ks], v[q*vs], s)
		}
		out[l] = s
	}
}

// rank1 runs p when k = 1 and C's rows are whole vectors (n a multiple of
// 8): every element is one fused multiply-add from its start, C row i =
// fma(op(A)[i][0], op(B)'s only row, start), so no tile or packing is
// needed, only op(B)'s row gathered when B is transposed. It reports
// whether it did.
func (p *problem) rank1(m, n int) bool {
	if p.k != 1 || n%8 != 0 || n > kc*nc {
		return false
	}
	b := p.b[:n]
	if p.transB {
		buf := pool.Get().(*buffers)
		defer pool.Put(buf)
		for j := range n {
			buf.b[j] = p.b[j*p.ldb]
		}
		b = buf.b[:n]
	}
	as := p.lda
	if p.transA {
		as = 1
	}
	flags, cin, ldin := 0, p.c, p.ldc
	switch {
	case p.bias != nil:
		flags, cin, ldin = loadC, p.bias, 0
	case p.acc:
		flags = loadC
	}
	if p.relu {
		flags |= storeReLU
	}
	outer(m, n, p.a, as, b, p.c, p.ldc, cin, ldin, flags)
	return true
}

// outerGo is outer's portable form: c[i*ldc+j] = fma(a[i*as], b[j],
// start), start cin[i*ldin+j] with flags&loadC and +0 otherwise, ReLU at
// the store with flags&storeReLU.
func outerGo(m, n int, a []float32, as int, b, c []float32, ldc int, cin []float32, ldin, flags int) {
	for i := range m {
		for j := range n {
			var s float32
			if flags&loadC != 0 {
				s = cin[i*ldin+j]
			}
			s = FMA32(a[i*as], b[j], s)
			if flags&storeReLU != 0 && s < 0 {
				s = 0
			}
			c[i*ldc+j] = s
		}
	}
}
