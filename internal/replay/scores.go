package replay

import (
	"math"
	"sort"
)

var nan = math.NaN()

// minSeconds floors durations in relative figures, so sub-second jobs do not
// turn every error into an infinite ratio.
const minSeconds = 1.0

// Scores are the accuracy figures of one estimator over the scored jobs.
type Scores struct {
	Predicted     int     `json:"predicted"`        // jobs the estimator answered
	Coverage      float64 `json:"coverage"`         // Predicted / scored jobs
	Within2x      float64 `json:"within_2x"`        // fraction with actual/2 <= predicted <= 2*actual
	Within100     float64 `json:"within_100pct"`    // fraction with |predicted-actual| <= actual
	MedianRelErr  float64 `json:"median_rel_err"`   // median |predicted-actual| / actual
	MAESeconds    float64 `json:"mae_s"`            // mean absolute error in seconds
	MedianAbsErrS float64 `json:"median_abs_err_s"` // median absolute error in seconds
}

// scorer accumulates one estimator's errors.
type scorer struct {
	rel, abs        []float64
	within2x, in100 int
	sumAbs          float64
}

func (s *scorer) add(pred float64, ok bool, actual float64) {
	if !ok || math.IsNaN(pred) {
		return
	}
	a := math.Max(actual, minSeconds)
	p := math.Max(pred, minSeconds)
	if p >= a/2 && p <= 2*a {
		s.within2x++
	}
	rel := math.Abs(p-a) / a
	if rel <= 1 {
		s.in100++
	}
	d := math.Abs(pred - actual)
	s.rel = append(s.rel, rel)
	s.abs = append(s.abs, d)
	s.sumAbs += d
}

func (s *scorer) scores(total int) Scores {
	n := len(s.rel)
	if n == 0 {
		return Scores{}
	}
	return Scores{
		Predicted:     n,
		Coverage:      float64(n) / float64(total),
		Within2x:      float64(s.within2x) / float64(n),
		Within100:     float64(s.in100) / float64(n),
		MedianRelErr:  median(s.rel),
		MAESeconds:    s.sumAbs / float64(n),
		MedianAbsErrS: median(s.abs),
	}
}

// median returns the median of xs, sorting it in place.
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
