// Package modelmath is the arithmetic dense models share: the logistic
// output (sigmoid, binary cross-entropy on the logit and its gradient) and
// the counter-based draws that initialise their parameters. Written once,
// so that every model that uses it (the built-in dlrm and logreg among
// them) rounds alike and reports a comparable loss.
//
// It imports only the standard library, never framework/.
package modelmath

import "math"

// Uniform is draw i, in [0, 1), of the splitmix64 stream seeded with seed.
// Being counter based, a parameter's initial value depends only on (seed,
// its position in canonical order), not on how many values were drawn
// before it.
func Uniform(seed, i uint64) float64 {
	z := seed + (i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// Sigmoid is computed in float64 and rounded once, in the form that cannot
// overflow for either sign of z.
func Sigmoid(z float32) float32 {
	if z >= 0 {
		return float32(1 / (1 + math.Exp(-float64(z))))
	}
	e := math.Exp(float64(z))
	return float32(e / (1 + e))
}

// BCEWithLogit is the binary cross-entropy of label y for logit z,
// log(1+e^z) - y·z, written so that it neither overflows nor loses the
// small-probability tail to rounding.
func BCEWithLogit(z, y float64) float64 {
	return max(z, 0) - y*z + math.Log1p(math.Exp(-math.Abs(z)))
}

// Loss is the logistic output of a batch of B = len(logits) samples: it
// writes scores[i] = sigmoid(logits[i]) when scores is not nil, puts
// d(mean loss)/d(logit) = (p - y)/B into dz (which may be logits itself),
// and returns the mean binary cross-entropy, computed in float64 from the
// logits.
func Loss(logits, labels, scores, dz []float32) float64 {
	B := len(logits)
	var loss float64
	for i, z := range logits {
		p := Sigmoid(z)
		if scores != nil {
			scores[i] = p
		}
		y := labels[i]
		loss += BCEWithLogit(float64(z), float64(y))
		dz[i] = (p - y) / float32(B)
	}
	return loss / float64(B)
}
