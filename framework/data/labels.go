package data

import (
	"math"
	"math/rand/v2"
)

// labelNoiseDomain keeps the label-noise stream apart from the tables'
// and the dense features' streams of the same batch.
const labelNoiseDomain = 0x6c6e6f697365 // "lnoise"

// labeler draws a synthetic sample's label from the planted teacher's
// score: Bernoulli(σ(3·score + offset + noise·ε)), ε a standard normal
// of the sample that no feature carries (config.Dataset.LabelOffset and
// LabelNoise). With both 0 it is the teacher's Bernoulli(σ(3·score))
// bit for bit, on the same random draws, so every existing dataset keeps
// its labels; the noise has a stream of its own (by batch), drawn only
// when asked for.
type labeler struct {
	offset, noise float64
	eps           *rand.Rand
}

func newLabeler(seed, stream uint64, offset, noise float64) labeler {
	l := labeler{offset: offset, noise: noise}
	if noise > 0 {
		l.eps = rand.New(rand.NewPCG(seed, splitmix(stream^labelNoiseDomain)))
	}
	return l
}

// label is 1 with the teacher's probability for score, u a uniform draw.
func (l labeler) label(score, u float64) float32 {
	logit := 3 * score
	if l.offset != 0 {
		logit += l.offset
	}
	if l.eps != nil {
		logit += l.noise * l.eps.NormFloat64()
	}
	if u < 1/(1+math.Exp(-logit)) {
		return 1
	}
	return 0
}
