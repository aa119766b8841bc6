package gemm

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func fill(rng *rand.Rand, n int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = rng.Float32()*2 - 1
	}
	return xs
}

// reference is the contract spelled out: each element one chain of FMA32
// over k in order, from C's old value or +0.
func reference(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			var s float32
			if acc {
				s = c[i*ldc+j]
			}
			for q := range k {
				av, bv := a[i*lda+q], b[q*ldb+j]
				if transA {
					av = a[q*lda+i]
				}
				if transB {
					bv = b[j*ldb+q]
				}
				s = FMA32(av, bv, s)
			}
			c[i*ldc+j] = s
		}
	}
}

// exactFMA rounds x·y + z once, through math/big.
func exactFMA(x, y, z float32) float32 {
	p := new(big.Float).SetPrec(200).SetFloat64(float64(x))
	p.Mul(p, new(big.Float).SetFloat64(float64(y)))
	p.Add(p, new(big.Float).SetFloat64(float64(z)))
	f, _ := p.Float32()
	return f
}

func TestFMA32IsOneRounding(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Cases built to sit on float32 midpoints after a float64 rounding:
	// z = 1 and x·y a tiny value, just below, at and above half an ulp.
	cases := [][3]float32{
		{1, 0x1p-24, 1}, {1, 0x1p-24 + 0x1p-47, 1}, {1, -0x1p-25, 1},
		{0x1.000002p0, 0x1.fffffep-25, 1}, {0x1.000002p0, -0x1.fffffep-26, 1},
		{0x1p-70, 0x1p-70, 0x1p-140}, {0x1.8p-75, 0x1.8p-75, 0},
	}
	for range 200000 {
		x := math.Float32frombits(rng.Uint32())
		y := math.Float32frombits(rng.Uint32())
		z := math.Float32frombits(rng.Uint32())
		if isFinite(x) && isFinite(y) && isFinite(z) && isFinite(x*y) {
			cases = append(cases, [3]float32{x, y, z})
		}
		// Products near z's size, where cancellation and ties happen.
		x, y = rng.Float32()*2-1, rng.Float32()*2-1
		cases = append(cases, [3]float32{x, y, -x*y + float32(rng.NormFloat64())*0x1p-30})
		cases = append(cases, [3]float32{x, 0x1p-24, 1 + float32(rng.IntN(4))*0x1p-23})
	}
	for _, c := range cases {
		got, want := FMA32(c[0], c[1], c[2]), exactFMA(c[0], c[1], c[2])
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("FMA32(%g, %g, %g) = %g, want %g", c[0], c[1], c[2], got, want)
		}
	}
}

func isFinite(f float32) bool {
	return !math.IsInf(float64(f), 0) && !math.IsNaN(float64(f))
}

func TestSgemmMatchesContractBitForBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// {200, 70, 300} is large enough for 3 threads to share its row blocks;
	// the thin ones are DLRM's logit layer, its widths 13, 16 and 32 and a
	// k of 1.
	shapes := [][3]int{{1, 1, 1}, {6, 16, 4}, {7, 17, 5}, {13, 64, 512}, {100, 33, 300}, {97, 1030, 9}, {5, 3, 0}, {200, 70, 300},
		{64, 1, 32}, {1, 32, 300}, {64, 32, 1}, {16, 32, 300}, {64, 13, 64}, {12, 48, 7}, {30, 16, 13},
		// The thin paths (gemv.go): blocks of 32 and 8 lanes, an
		// overlapping last block, k of 1, and below 8 lanes the tile.
		{45, 1, 17}, {8, 1, 1}, {9, 1, 300}, {7, 1, 5}, {1, 13, 9}, {1, 77, 5}, {1, 8, 1}, {1, 7, 3}, {40, 1, 33}, {16, 1, 8},
		// k = 1 with whole vectors of columns (rank1).
		{5, 16, 1}, {9, 24, 1}}
	defer func(m int) { directMode = m }(directMode)
	for mode := range 3 {
		directMode = mode
		testShapes(t, rng, shapes)
	}
}

func testShapes(t *testing.T, rng *rand.Rand, shapes [][3]int) {
	t.Helper()
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, acc := range []bool{false, true} {
					lda, ldb, ldc := k+1, n+2, n+3
					if tA {
						lda = m + 1
					}
					if tB {
						ldb = k + 2
					}
					a, b := fill(rng, max(m, k)*lda+1), fill(rng, max(n, k)*ldb+1)
					c := fill(rng, m*ldc)
					want := append([]float32(nil), c...)
					reference(tA, tB, m, n, k, a, lda, b, ldb, acc, want, ldc)
					for _, threads := range []int{1, 3} {
						got := append([]float32(nil), c...)
						SgemmThreads(threads, tA, tB, m, n, k, a, lda, b, ldb, acc, got, ldc)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("m n k %v transA %v transB %v acc %v threads %d mode %d: c[%d] = %g, want %g (kernel %s)",
									s, tA, tB, acc, threads, directMode, i, got[i], want[i], Kernel())
							}
						}
					}
				}
			}
		}
	}
}

// The reference itself is a matrix product: check it against float64.
func TestReferenceIsAProduct(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m, n, k := 9, 11, 40
	a, b, c := fill(rng, m*k), fill(rng, k*n), make([]float32, m*n)
	reference(false, false, m, n, k, a, k, b, n, false, c, n)
	for i := range m {
		for j := range n {
			var s float64
			for q := range k {
				s += float64(a[i*k+q]) * float64(b[q*n+j])
			}
			if math.Abs(s-float64(c[i*n+j])) > 1e-5 {
				t.Fatalf("c[%d][%d] = %g, want %g", i, j, c[i*n+j], s)
			}
		}
	}
}

func TestThreadCountDoesNotChangeBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range [][3]int{{2048, 256, 512}, {128, 1024, 2048}} {
		m, n, k := s[0], s[1], s[2]
		a, b := fill(rng, m*k), fill(rng, n*k)
		var first []float32
		for _, threads := range []int{1, 2, 3, 4} {
			c := make([]float32, m*n)
			SgemmThreads(threads, false, true, m, n, k, a, k, b, k, false, c, n)
			if first == nil {
				first = c
				continue
			}
			for i := range c {
				if math.Float32bits(c[i]) != math.Float32bits(first[i]) {
					t.Fatalf("%v threads %d: c[%d] = %g, with 1 thread %g", s, threads, i, c[i], first[i])
				}
			}
		}
	}
}

func TestKernelGoMatchesKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, k := range []int{1, 3, 4, 7, 256} {
		a, b := fill(rng, k*mr), fill(rng, k*nr)
		for _, load := range []bool{false, true} {
			c := fill(rng, mr*20)
			want := append([]float32(nil), c...)
			kernelGo(k, a, b, want, 20, load)
			kernel(k, a, b, c, 20, load)
			for i := range c {
				if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
					t.Fatalf("k %d load %v: c[%d] = %g, kernelGo %g (kernel %s)", k, load, i, c[i], want[i], Kernel())
				}
			}
		}
	}
}

// The strided kernel reads A in place either way round and B at any row
// stride; the Go form is the contract.
func TestKernelSMatchesKernelGoS(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, k := range []int{1, 3, 4, 9, 300} {
		for _, st := range [][3]int{{1, mr, nr}, {k + 3, 1, nr}, {1, 7, 21}, {k, 1, 16}} {
			rs, ks, bs := st[0], st[1], st[2]
			a, b := fill(rng, (mr-1)*rs+(k-1)*ks+1), fill(rng, (k-1)*bs+nr)
			for _, load := range []bool{false, true} {
				c := fill(rng, mr*20)
				want := append([]float32(nil), c...)
				flags := 0
				if load {
					flags = loadC
				}
				kernelGoS(k, a, rs, ks, b, bs, want, 20, want, 20, flags)
				kernelS(k, a, rs, ks, b, bs, c, 20, c, 20, flags)
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
						t.Fatalf("k %d strides %v load %v: c[%d] = %g, kernelGoS %g (kernel %s)", k, st, load, i, c[i], want[i], Kernel())
					}
				}
			}
		}
	}
}

// SgemmBias is the bias copied into every row, the accumulating product,
// then ReLU, bit for bit: with k over one cache block (the bias loaded by
// the first, ReLU stored by the last), partial edge tiles, A packed and in
// place, 1 and 3 threads.
func TestSgemmBiasMatchesCopyProductReLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	defer func(m int) { directMode = m }(directMode)
	shapes := [][3]int{{1, 1, 1}, {7, 17, 5}, {64, 13, 64}, {512, 1, 32}, {45, 1, 9}, {1, 13, 9}, {1, 40, 3}, {33, 16, 1}, {33, 40, 1}, {97, 33, 300}, {200, 70, 600}, {6, 16, 0}}
	for mode := range 3 {
		directMode = mode
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			for _, tA := range []bool{false, true} {
				for _, relu := range []bool{false, true} {
					lda, ldc := k+1, n+3
					if tA {
						lda = m + 1
					}
					a, b, bias := fill(rng, max(m, k)*lda+1), fill(rng, n*(k+2)+1), fill(rng, n)
					want := make([]float32, m*ldc)
					for i := range m {
						copy(want[i*ldc:i*ldc+n], bias)
					}
					SgemmThreads(1, tA, true, m, n, k, a, lda, b, k+2, true, want, ldc)
					if relu {
						for i := range m {
							ReLU(want[i*ldc : i*ldc+n])
						}
					}
					for _, threads := range []int{1, 3} {
						got := make([]float32, m*ldc)
						SgemmBias(threads, tA, true, m, n, k, a, lda, b, k+2, bias, relu, got, ldc)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("m n k %v transA %v relu %v threads %d mode %d: c[%d] = %g, want %g", s, tA, relu, threads, mode, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}
