// Package replay evaluates duration estimators on a historical trace: it
// replays the trace in submit order, lets every estimator predict each job
// from only what had ended before that job's submit time, and scores the
// predictions on the last half of the trace.
package replay

import (
	"container/heap"
	"context"
	"fmt"

	"github.com/schedmate/schedmate/internal/trace"
)

// Predictor is one duration estimator under evaluation.
type Predictor interface {
	// Name labels the estimator in reports.
	Name() string
	// Predict returns the predicted run time in seconds of a job about to be
	// submitted; ok is false when the estimator has no answer for it.
	Predict(j *trace.Job) (seconds float64, ok bool)
	// Observe adds a job that has ended to the estimator's history.
	Observe(j *trace.Job)
}

// StartObserver is a Predictor that also learns of jobs that have started
// and not yet ended, whose elapsed time at a later submit is known then.
type StartObserver interface {
	Started(j *trace.Job)
}

// Options tunes a replay.
type Options struct {
	// Progress, when set, is called now and then with the jobs done so far.
	Progress func(done, total int)
	// OnPrediction, when set, receives every job's predictions in submit
	// order, indexed like the predictors passed to Run (NaN: no answer).
	OnPrediction func(j *trace.Job, predicted []float64)
}

// Result holds the figures of one replay.
type Result struct {
	Jobs    int               // jobs replayed
	Scored  int               // jobs in the scored last half
	Methods map[string]Scores // figures per estimator name
	Order   []string          // estimator names in the order given
}

// Run replays jobs (sorted by submit time) through every predictor.
func Run(ctx context.Context, jobs []trace.Job, preds []Predictor, opts Options) (*Result, error) {
	if len(jobs) == 0 {
		return nil, fmt.Errorf("replay: empty trace")
	}
	if len(preds) == 0 {
		return nil, fmt.Errorf("replay: no estimators")
	}
	scoreFrom := len(jobs) / 2
	acc := make([]scorer, len(preds))
	pending := &timeHeap{at: func(j *trace.Job) float64 { return j.End }}
	queued := &timeHeap{at: func(j *trace.Job) float64 { return j.Start }}
	var starters []StartObserver
	for _, p := range preds {
		if s, ok := p.(StartObserver); ok {
			starters = append(starters, s)
		}
	}
	predicted := make([]float64, len(preds))
	for i := range jobs {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("replay interrupted at job %d: %w", i, err)
			}
			if opts.Progress != nil {
				opts.Progress(i, len(jobs))
			}
		}
		j := &jobs[i]
		for queued.Len() > 0 && queued.top() <= j.Submit {
			started := heap.Pop(queued).(*trace.Job)
			for _, s := range starters {
				s.Started(started)
			}
		}
		for pending.Len() > 0 && pending.top() <= j.Submit {
			done := heap.Pop(pending).(*trace.Job)
			for _, p := range preds {
				p.Observe(done)
			}
		}
		for k, p := range preds {
			v, ok := p.Predict(j)
			if !ok {
				v = nan
			}
			predicted[k] = v
			if i >= scoreFrom {
				acc[k].add(v, ok, j.Duration())
			}
		}
		if opts.OnPrediction != nil {
			opts.OnPrediction(j, predicted)
		}
		heap.Push(pending, j)
		if len(starters) > 0 {
			heap.Push(queued, j)
		}
	}
	if opts.Progress != nil {
		opts.Progress(len(jobs), len(jobs))
	}
	res := &Result{
		Jobs:    len(jobs),
		Scored:  len(jobs) - scoreFrom,
		Methods: make(map[string]Scores, len(preds)),
	}
	for k, p := range preds {
		res.Methods[p.Name()] = acc[k].scores(res.Scored)
		res.Order = append(res.Order, p.Name())
	}
	return res, nil
}

// timeHeap orders pending jobs by one of their times.
type timeHeap struct {
	jobs []*trace.Job
	at   func(*trace.Job) float64
}

func (h *timeHeap) top() float64 { return h.at(h.jobs[0]) }

// Len implements heap.Interface.
func (h *timeHeap) Len() int { return len(h.jobs) }

// Less implements heap.Interface.
func (h *timeHeap) Less(a, b int) bool { return h.at(h.jobs[a]) < h.at(h.jobs[b]) }

// Swap implements heap.Interface.
func (h *timeHeap) Swap(a, b int) { h.jobs[a], h.jobs[b] = h.jobs[b], h.jobs[a] }

// Push implements heap.Interface.
func (h *timeHeap) Push(x any) { h.jobs = append(h.jobs, x.(*trace.Job)) }

// Pop implements heap.Interface.
func (h *timeHeap) Pop() any {
	x := h.jobs[len(h.jobs)-1]
	h.jobs = h.jobs[:len(h.jobs)-1]
	return x
}
