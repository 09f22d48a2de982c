package replay

import (
	"container/heap"
	"sort"

	"github.com/schedmate/schedmate/internal/trace"
)

// Baselines returns the reference estimators every replay reports beside
// schedmate's: the requested time limit (only when the trace has one), the
// mean of the user's last two jobs (Tsafrir et al.), the median of the user's
// last five, the median of the same user and job name, the same user and
// logical name (only when the trace has logical names) and the global median.
// Each falls back to the global median where its own history is empty.
func Baselines(jobs []trace.Job) []Predictor {
	var hasLimit, hasLogical bool
	for i := range jobs {
		hasLimit = hasLimit || jobs[i].TimeLimit > 0
		hasLogical = hasLogical || jobs[i].LogicalName != ""
	}
	global := &globalMedian{}
	var out []Predictor
	if hasLimit {
		out = append(out, timeLimit{})
	}
	out = append(out,
		&keyed{name: "user_last2_mean", window: 2, key: userKey, reduce: mean, global: global},
		&keyed{name: "user_last5_median", window: 5, key: userKey, reduce: medianCopy, global: global},
		&keyed{name: "user_name_median", window: 10, key: userNameKey, reduce: medianCopy, global: global},
	)
	if hasLogical {
		out = append(out, &keyed{name: "user_logical_median", window: 10, key: userLogicalKey, reduce: medianCopy, global: global})
	}
	return append(out, global)
}

// timeLimit predicts the user's requested time limit.
type timeLimit struct{}

// Name identifies the method in reports.
func (timeLimit) Name() string { return "time_limit" }

// Predict returns the predicted duration of j, and false when the method has none.
func (timeLimit) Predict(j *trace.Job) (float64, bool) {
	return j.TimeLimit, j.TimeLimit > 0
}

// Observe learns from an ended job.
func (timeLimit) Observe(*trace.Job) {}

func userKey(j *trace.Job) string        { return j.User }
func userNameKey(j *trace.Job) string    { return j.User + "\x00" + j.Name }
func userLogicalKey(j *trace.Job) string { return j.User + "\x00" + j.LogicalName }

// keyed reduces the last few durations seen under a key of the job.
type keyed struct {
	name   string
	window int
	key    func(*trace.Job) string
	reduce func([]float64) float64
	global *globalMedian
	recent map[string][]float64
	buf    []float64
}

// Name identifies the method in reports.
func (k *keyed) Name() string { return k.name }

// Predict returns the predicted duration of j, and false when the method has none.
func (k *keyed) Predict(j *trace.Job) (float64, bool) {
	if r := k.recent[k.key(j)]; len(r) > 0 {
		k.buf = append(k.buf[:0], r...)
		return k.reduce(k.buf), true
	}
	return k.global.Predict(j)
}

// Observe learns from an ended job.
func (k *keyed) Observe(j *trace.Job) {
	if k.recent == nil {
		k.recent = make(map[string][]float64)
	}
	key := k.key(j)
	r := append(k.recent[key], j.Duration())
	if len(r) > k.window {
		copy(r, r[len(r)-k.window:])
		r = r[:k.window]
	}
	k.recent[key] = r
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func medianCopy(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// globalMedian is the exact running median of every ended job, kept with two
// heaps.
type globalMedian struct {
	low  maxHeap
	high minHeap
}

// Name identifies the method in reports.
func (g *globalMedian) Name() string { return "global_median" }

// Predict returns the predicted duration of j, and false when the method has none.
func (g *globalMedian) Predict(*trace.Job) (float64, bool) {
	switch {
	case g.low.Len() == 0:
		return 0, false
	case g.low.Len() > g.high.Len():
		return g.low.v[0], true
	default:
		return (g.low.v[0] + g.high.v[0]) / 2, true
	}
}

// Observe adds a duration. The keyed baselines share this estimator as their
// fallback and never feed it: the replay feeds it once, as a predictor.
func (g *globalMedian) Observe(j *trace.Job) {
	g.add(j.Duration())
}

func (g *globalMedian) add(d float64) {
	if g.low.Len() == 0 || d <= g.low.v[0] {
		heap.Push(&g.low, d)
	} else {
		heap.Push(&g.high, d)
	}
	if g.low.Len() > g.high.Len()+1 {
		heap.Push(&g.high, heap.Pop(&g.low))
	} else if g.high.Len() > g.low.Len() {
		heap.Push(&g.low, heap.Pop(&g.high))
	}
}

// floatHeap holds the storage shared by minHeap and maxHeap.
type floatHeap struct{ v []float64 }

// Len implements heap.Interface.
func (h floatHeap) Len() int { return len(h.v) }

// Swap implements heap.Interface.
func (h floatHeap) Swap(a, b int) { h.v[a], h.v[b] = h.v[b], h.v[a] }

// Push implements heap.Interface.
func (h *floatHeap) Push(x any) { h.v = append(h.v, x.(float64)) }

// Pop implements heap.Interface.
func (h *floatHeap) Pop() any {
	x := h.v[len(h.v)-1]
	h.v = h.v[:len(h.v)-1]
	return x
}

type minHeap struct{ floatHeap }

// Less implements heap.Interface.
func (h minHeap) Less(a, b int) bool { return h.v[a] < h.v[b] }

type maxHeap struct{ floatHeap }

// Less implements heap.Interface.
func (h maxHeap) Less(a, b int) bool { return h.v[a] > h.v[b] }
