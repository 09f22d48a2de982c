package replay

import (
	"math"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/trace"
)

// AdvisorPredictor runs schedmate's advisor over the replayed history.
type AdvisorPredictor struct {
	ix   *advisor.Index
	opts advisor.Options
	last advisor.Estimate
}

// Schedmate returns the advisor as a replay estimator.
func Schedmate(opts advisor.Options) *AdvisorPredictor {
	return &AdvisorPredictor{ix: advisor.NewIndex(), opts: opts}
}

// Name implements Predictor.
func (p *AdvisorPredictor) Name() string { return "schedmate" }

// Predict implements Predictor.
func (p *AdvisorPredictor) Predict(j *trace.Job) (float64, bool) {
	info := JobInfo(j)
	q := advisor.QueryOf(&info)
	q.Now = int64(j.Submit)
	p.last = p.ix.Estimate(q, p.opts)
	return p.last.EstimateS, p.last.Source != advisor.SourceNone
}

// Last returns the full estimate of the latest Predict call.
func (p *AdvisorPredictor) Last() advisor.Estimate { return p.last }

// Observe implements Predictor.
func (p *AdvisorPredictor) Observe(j *trace.Job) {
	info := JobInfo(j)
	nan := math.NaN()
	p.ix.Add(advisor.NewRecord(&info, int64(j.End), j.Duration(), advisor.ParseState(j.State), nan, nan, nan))
}

// Started implements StartObserver.
func (p *AdvisorPredictor) Started(j *trace.Job) {
	info := JobInfo(j)
	p.ix.Started(&info, int64(j.Start))
}

// JobInfo describes a trace job with what was known at its submit time.
func JobInfo(j *trace.Job) advisor.JobInfo {
	return advisor.JobInfo{
		ID:          j.ID,
		User:        j.User,
		Account:     j.Account,
		Partition:   j.Partition,
		QOS:         j.QOS,
		Name:        j.Name,
		LogicalName: j.LogicalName,
		Class:       j.Class,
		WorkDir:     j.WorkDir,
		SubmitLine:  j.SubmitLine,
		NumNodes:    j.NNodes,
		NumCPUs:     j.NCPUs,
		GPUs:        j.GPUs,
		TimeLimitS:  j.TimeLimit,
	}
}
