package train

import (
	"math"
	"sort"
)

// Evaluation holds held-out metrics.
type Evaluation struct {
	// AUC is the area under the ROC curve (ties count one half).
	AUC float64
	// LogLoss is the mean binary cross-entropy.
	LogLoss float64
	// NE is normalized entropy: LogLoss divided by the entropy of the
	// base rate (He et al., 2014); below 1 means better than the base rate.
	NE float64
	// Accuracy is the share of samples whose prediction, thresholded at
	// 0.5 (p ≥ 0.5 means 1), equals the label: the mixed-precision
	// paper's test accuracy (its Eq. 1 drop is taken of it).
	Accuracy float64
}

// Evaluate computes AUC, logloss and NE of predicted probabilities.
func Evaluate(scores, labels []float32) Evaluation {
	n := len(scores)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] < scores[idx[b]] })
	var pos, rankSum, logloss float64
	for i := 0; i < n; {
		// j starts past i: a NaN score (a diverged model) equals nothing,
		// not even itself, and must still move the scan on.
		j := i + 1
		for j < n && scores[idx[j]] == scores[idx[i]] {
			j++
		}
		avgRank := float64(i+j+1) / 2 // 1-based ranks i+1..j
		for k := i; k < j; k++ {
			if labels[idx[k]] > 0.5 {
				pos++
				rankSum += avgRank
			}
		}
		i = j
	}
	const eps = 1e-7
	for i := range scores {
		p := math.Min(math.Max(float64(scores[i]), eps), 1-eps)
		if labels[i] > 0.5 {
			logloss -= math.Log(p)
		} else {
			logloss -= math.Log(1 - p)
		}
	}
	e := Evaluation{AUC: math.NaN(), LogLoss: logloss / float64(n), NE: math.NaN()}
	e.Accuracy = accuracy(scores, labels)
	neg := float64(n) - pos
	if pos > 0 && neg > 0 {
		e.AUC = (rankSum - pos*(pos+1)/2) / (pos * neg)
		rate := pos / float64(n)
		e.NE = e.LogLoss / -(rate*math.Log(rate) + (1-rate)*math.Log(1-rate))
	}
	return e
}

// accuracy is the share of scores that, thresholded at 0.5, equal their
// labels (a NaN score predicts 0).
func accuracy(scores, labels []float32) float64 {
	if len(scores) == 0 {
		return math.NaN()
	}
	right := 0
	for i, p := range scores {
		if (p >= 0.5) == (labels[i] > 0.5) {
			right++
		}
	}
	return float64(right) / float64(len(scores))
}
