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
	// endpoint gives a job's embedding endpoint vector (nil: none); nil
	// when the replay uses the built-in embedding only.
	endpoint func(*trace.Job) []int8
	// endpointSearches counts the predictions whose similarity search
	// compared endpoint vectors.
	endpointSearches int
}

// Schedmate returns the advisor as a replay estimator.
func Schedmate(opts advisor.Options) *AdvisorPredictor {
	return &AdvisorPredictor{ix: advisor.NewIndex(), opts: opts}
}

// SchedmateEndpoint returns the advisor as a replay estimator whose
// similarity search compares the embedding endpoint's vectors, as
// `schedmate estimate` does: vec gives each job's (nil for a job without
// one), and a search falls back to the built-in embedding when most of the
// history it reads has none of the query's length.
func SchedmateEndpoint(opts advisor.Options, vec func(*trace.Job) []int8) *AdvisorPredictor {
	return &AdvisorPredictor{ix: advisor.NewIndex(), opts: opts, endpoint: vec}
}

// EndpointSearches returns how many predictions so far compared endpoint
// vectors.
func (p *AdvisorPredictor) EndpointSearches() int { return p.endpointSearches }

// Name implements Predictor.
func (p *AdvisorPredictor) Name() string { return "schedmate" }

// Predict implements Predictor.
func (p *AdvisorPredictor) Predict(j *trace.Job) (float64, bool) {
	info := JobInfo(j)
	q := advisor.QueryOf(&info)
	q.Now = int64(j.Submit)
	if p.endpoint != nil {
		q.Endpoint = p.endpoint(j)
		if ok, _ := p.ix.UseEndpoint(&q); ok {
			p.endpointSearches++
		}
	}
	p.last = p.ix.Estimate(q, p.opts)
	return p.last.EstimateS, p.last.Source != advisor.SourceNone
}

// Last returns the full estimate of the latest Predict call.
func (p *AdvisorPredictor) Last() advisor.Estimate { return p.last }

// Observe implements Predictor.
func (p *AdvisorPredictor) Observe(j *trace.Job) {
	info := JobInfo(j)
	nan := math.NaN()
	rec := advisor.NewRecord(&info, int64(j.End), j.Duration(), advisor.ParseState(j.State), nan, nan, nan)
	if p.endpoint != nil {
		rec.Endpoint = p.endpoint(j)
	}
	p.ix.Add(rec)
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
