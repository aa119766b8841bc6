package quant

// RowBits is Eq. 3's bits of one stored row of dim values: bits·D + 64 for
// the integer precisions (the FP32 scale and bias), 16·D for FP16 (no
// quantization parameters, Sec. 4.3.3: "compression for FP16 ... is 0.5"),
// 32·D for FP32.
func RowBits(p Precision, dim int) int64 {
	n := int64(p.Bits()) * int64(dim)
	if p.Integer() {
		n += 64
	}
	return n
}

// Cache is the FP32 cache beside a low-precision table, for Eq. 2: the
// fraction of the table's rows it holds, and whether its policy keeps an
// access counter per embedding row (LFU).
type Cache struct {
	Fraction float64
	Counters bool
}

// CompressionFactor is Eq. 2 per embedding row: (M_Tlowprec + M_C + M_tags
// + M_cnt) / M_TFP32 with M_Tlowprec from Eq. 3, an FP32 cache of
// c.Fraction of the rows (c·32·D bits per row), an INT32 tag per cached
// row (32·c) and, with c.Counters, an INT32 access counter per embedding
// row (32). Appendix A's Table 11 is this function at D = 128.
func CompressionFactor(p Precision, dim int, c Cache) float64 {
	d := float64(dim)
	bits := float64(RowBits(p, dim)) + c.Fraction*32*d + 32*c.Fraction
	if c.Counters {
		bits += 32
	}
	return bits / (32 * d)
}

// TablesFactor is Eq. 2 over tables of the given rows, each stored at its
// own precision (tables too small for low precision stay FP32), without a
// cache: Σ rows·RowBits / Σ rows·32·D.
func TablesFactor(rows []int64, precisions []Precision, dim int) float64 {
	var num, den float64
	for t, n := range rows {
		num += float64(n) * float64(RowBits(precisions[t], dim))
		den += float64(n) * 32 * float64(dim)
	}
	if den == 0 {
		return 1
	}
	return num / den
}
