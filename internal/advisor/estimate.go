package advisor

import (
	"math"
	"sort"

	"github.com/schedmate/schedmate/internal/vector"
)

// Sources label where an estimate came from, best first.
const (
	SourceResubmission = "resubmission"     // admission analyzer: same user, directory, command and branch
	SourceSimilar      = "similar"          // similar-job retrieval above the threshold
	SourceUserSimilar  = "user_similar"     // the user's loosely similar jobs
	SourceLimitRatio   = "time_limit_ratio" // requested limit times the usual used fraction
	SourceUser         = "user"             // the user's recent jobs
	SourcePartition    = "partition"        // recent jobs of the partition
	SourceGlobal       = "global"           // recent jobs of the cluster
	SourceTimeLimit    = "time_limit"       // nothing known but the requested limit
	SourceNone         = "none"             // nothing known at all
)

// simSharpness raises similarity in the weights, so an exact match counts
// far more than a 0.9 one.
const simSharpness = 20

// earlyEndWeight discounts runs that failed or were cancelled: they say
// when the job might stop, not how long it needs, and must not silently
// drag the estimate down.
const earlyEndWeight = 0.5

// outcomeWeight is a record's weight for its outcome.
func outcomeWeight(s State) float64 {
	if s.ranFull() {
		return 1
	}
	return earlyEndWeight
}

// Options tunes retrieval and estimation.
type Options struct {
	TopK          int     // matches reported (default 3)
	Threshold     float32 // cosine similarity for a match (default 0.90)
	UserThreshold float32 // looser similarity for the user_similar fallback (default 0.5)
	Pool          int     // matches the estimate is computed from (default 40)
	Decay         float64 // weight kept per step back in time (default 0.85)
}

// DefaultOptions returns the paper's retrieval settings (top-3, cosine 0.90)
// with the estimator's defaults.
func DefaultOptions() Options {
	return Options{TopK: 3, Threshold: 0.90, UserThreshold: 0.5, Pool: 40, Decay: 0.85}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.TopK <= 0 {
		o.TopK = d.TopK
	}
	if o.Threshold <= 0 || o.Threshold > 1 {
		o.Threshold = d.Threshold
	}
	if o.UserThreshold <= 0 || o.UserThreshold > o.Threshold {
		o.UserThreshold = min(d.UserThreshold, o.Threshold)
	}
	if o.Pool < o.TopK {
		o.Pool = max(d.Pool, o.TopK)
	}
	if o.Decay <= 0 || o.Decay > 1 {
		o.Decay = d.Decay
	}
	return o
}

// Query is a job to estimate.
type Query struct {
	Vec        vector.Vec
	Keys       Keys
	TimeLimitS float64
	// Now is the submit time (Unix seconds or the trace clock); similar jobs
	// running at that time bound the estimate from below. Zero ignores them.
	Now int64
	// ProgramSlots, when the job's logical name was given (a trace's
	// program identity) rather than derived, are the vector components its
	// name and logical name are hashed to. Jobs of other logical names are
	// then other programs: they are compared without those components, so
	// that a hash collision cannot make them look like the same program.
	ProgramSlots []int
	// Endpoint, when set, is the job's vector from the embedding endpoint:
	// the similarity search then compares endpoint vectors (see
	// endpointvec.go). UseEndpoint decides whether it may.
	Endpoint []int8
}

// namedProgram reports whether the query's logical name is its program's
// identity.
func (q *Query) namedProgram() bool { return len(q.ProgramSlots) > 0 }

// QueryOf builds the query of a job.
func QueryOf(j *JobInfo) Query {
	q := Query{Vec: Embed(j), Keys: KeysOf(j), TimeLimitS: j.TimeLimitS}
	if j.LogicalName != "" {
		q.ProgramSlots = programSlots(j)
	}
	return q
}

// Match is one similar ended job.
type Match struct {
	JobID      string  `json:"job_id"`
	Similarity float64 `json:"similarity"`
	DurationS  float64 `json:"duration_s"`
	State      string  `json:"state"`
}

// Estimate is the advisor's answer for one job. Resource figures are nil when
// no match had them.
type Estimate struct {
	EstimateS  float64  `json:"estimate_s"`            // expected run time, all outcomes
	LowS       float64  `json:"low_s"`                 // 10th percentile
	HighS      float64  `json:"high_s"`                // 90th percentile
	CompleteS  float64  `json:"complete_s"`            // expected run time if the job completes
	PEarly     float64  `json:"p_early"`               // probability it fails or is cancelled early
	Source     string   `json:"source"`                // where the estimate came from (Source*)
	Confidence float64  `json:"confidence"`            // 0..1
	Matches    []Match  `json:"matches"`               // top-k similar jobs (empty for fallbacks)
	GPUUtil    *float64 `json:"gpu_util,omitempty"`    // mean SM utilisation percent
	GPUMemGB   *float64 `json:"gpu_mem_gb,omitempty"`  // peak GPU memory, GiB
	StepTimeS  *float64 `json:"step_time_s,omitempty"` // final step time
}

// candidate is a record with its similarity and weight. A censored one is a
// job still running: its duration is only a lower bound.
type candidate struct {
	rec      *Record
	sim      float32
	w        float64
	censored bool
}

// sharpen turns a similarity into a weight.
func sharpen(s float32) float64 { return math.Pow(float64(s), simSharpness) }

// Estimate answers a query from the index.
func (ix *Index) Estimate(q Query, opts Options) Estimate {
	opts = opts.withDefaults()
	pool := ix.similar(q, opts)
	if len(pool) > 0 {
		est := summarise(append(pool, ix.runningSimilar(q, opts.Threshold)...), opts)
		est.Source = SourceSimilar
		est.Matches = topMatches(pool, opts.TopK)
		return est
	}
	return ix.fallback(q, opts)
}

// similar gathers up to opts.Pool records above the threshold from the
// query's logical-name block, then (unless the logical name is the program's
// given identity) its user's block, newest first.
func (ix *Index) similar(q Query, opts Options) []candidate {
	var pool []candidate
	w := 1.0
	visit := func(r *Record) bool {
		if s := q.similarity(r); s >= opts.Threshold {
			pool = append(pool, candidate{rec: r, sim: s, w: w * sharpen(s) * outcomeWeight(r.State)})
			w *= opts.Decay
		}
		return len(pool) < opts.Pool
	}
	ix.logical[q.Keys.Logical].newestFirst(visit)
	if len(pool) < opts.Pool && !q.namedProgram() {
		ix.user[q.Keys.User].newestFirst(func(r *Record) bool {
			if r.LogicalKey == q.Keys.Logical {
				return true
			}
			return visit(r)
		})
	}
	return pool
}

// userPool is how many of the user's newest jobs the user fallback reads:
// the whole user block. They are weighed by sharpened similarity, not by
// age, so that the user's jobs most like the new one (same class,
// partition, account) decide the estimate, however many others came since.
const userPool = userCap

// minSimilarity floors similarity in fallback weights, so that a job
// sharing nothing with the query still counts a little.
const minSimilarity = 1e-3

// userSimilar estimates from the user's loosely similar jobs, if any.
func (ix *Index) userSimilar(q Query, opts Options) (Estimate, bool) {
	var loose []candidate
	w := 1.0
	ix.user[q.Keys.User].newestFirst(func(r *Record) bool {
		if s := vector.Cosine(&q.Vec, &r.Vec); s >= opts.UserThreshold {
			loose = append(loose, candidate{rec: r, sim: s, w: w * float64(s)})
			w *= opts.Decay
		}
		return len(loose) < opts.Pool
	})
	if len(loose) == 0 {
		return Estimate{}, false
	}
	return labelled(summarise(loose, opts), SourceUserSimilar, 0.5), true
}

// fallback walks the chain used when nothing similar is known. A job whose
// program is named skips the user's loosely similar jobs: above the loose
// threshold, another program can only be a hash collision.
func (ix *Index) fallback(q Query, opts Options) Estimate {
	if !q.namedProgram() {
		if est, ok := ix.userSimilar(q, opts); ok {
			return est
		}
	}
	if q.TimeLimitS > 0 {
		if ratio, ok := ix.limitRatio(q); ok {
			est := q.TimeLimitS * ratio
			return Estimate{EstimateS: est, LowS: est / 2, HighS: min(2*est, q.TimeLimitS), CompleteS: est,
				Source: SourceLimitRatio, Confidence: 0.3}
		}
	}
	alike := func(r *Record) float64 {
		return sharpen(max(vector.CosineWithout(&q.Vec, &r.Vec, q.ProgramSlots...), minSimilarity))
	}
	same := func(*Record) float64 { return 1 }
	for _, step := range []struct {
		r      *ring
		n      int
		weight func(*Record) float64
		source string
		conf   float64
	}{
		{ix.user[q.Keys.User], userPool, alike, SourceUser, 0.25},
		{ix.partition[q.Keys.Partition], 64, same, SourcePartition, 0.15},
		{ix.global, 256, same, SourceGlobal, 0.1},
	} {
		if recent := newest(step.r, step.n, step.weight); len(recent) > 0 {
			return labelled(summarise(recent, opts), step.source, step.conf)
		}
	}
	if q.TimeLimitS > 0 {
		return Estimate{EstimateS: q.TimeLimitS, LowS: 0, HighS: q.TimeLimitS, CompleteS: q.TimeLimitS,
			Source: SourceTimeLimit, Confidence: 0.05}
	}
	return Estimate{Source: SourceNone}
}

// limitRatio is the fraction of its requested limit a job is expected to
// use. The cluster's recent jobs give the prior: the median fraction, over
// the widest sample of how limits are padded. The user's own jobs that asked
// for about the same limit (within 2x) pull it towards the user's habit,
// in log space, with weight n against the prior's one: a user's fraction is
// tied to the limit they chose, and a single run is weak evidence.
func (ix *Index) limitRatio(q Query) (float64, bool) {
	ratios := func(r *ring, keep func(*Record) bool) []float64 {
		var out []float64
		r.newestFirst(func(rec *Record) bool {
			if rec.TimeLimitS > 0 && rec.DurationS > 0 && keep(rec) {
				out = append(out, math.Min(float64(rec.DurationS/rec.TimeLimitS), 1))
			}
			return len(out) < 64
		})
		sort.Float64s(out)
		return out
	}
	global := ratios(ix.global, func(*Record) bool { return true })
	if len(global) < 3 {
		return 0, false
	}
	prior := global[len(global)/2]
	own := ratios(ix.user[q.Keys.User], func(rec *Record) bool {
		l := float64(rec.TimeLimitS)
		return l >= q.TimeLimitS/2 && l <= 2*q.TimeLimitS
	})
	if len(own) == 0 {
		return prior, true
	}
	n := float64(len(own))
	return math.Exp((n*math.Log(own[len(own)/2]) + math.Log(prior)) / (n + 1)), true
}

// newest returns up to n of a block's newest records, weighed by weight.
func newest(r *ring, n int, weight func(*Record) float64) []candidate {
	var out []candidate
	r.newestFirst(func(rec *Record) bool {
		out = append(out, candidate{rec: rec, sim: 0, w: weight(rec)})
		return len(out) < n
	})
	return out
}

// labelled sets a fallback's source and scales its confidence.
func labelled(e Estimate, source string, conf float64) Estimate {
	e.Source = source
	e.Confidence *= conf
	return e
}

// summarise turns weighted candidates into an estimate.
func summarise(c []candidate, opts Options) Estimate {
	var total, full, simSum float64
	for _, x := range c {
		total += x.w
		simSum += float64(x.sim)
	}
	all := survival(c, func(*candidate) bool { return true })
	est := Estimate{EstimateS: pointEstimate(all)}
	// the range holds the estimate, which need not lie between the deciles:
	// a window that also covers a side cluster can lie beyond them
	est.LowS = min(quantile(all, 0.1), est.EstimateS)
	est.HighS = max(quantile(all, 0.9), est.EstimateS)

	ran := func(x *candidate) bool { return x.censored || x.rec.State.ranFull() }
	for i := range c {
		if ran(&c[i]) {
			full += c[i].w
		}
	}
	if full > 0 {
		est.CompleteS = quantile(survival(c, ran), 0.5)
	} else {
		est.CompleteS = est.EstimateS
	}
	var early float64
	for _, x := range c {
		if !ran(&x) && (full == 0 || float64(x.rec.DurationS) < est.CompleteS/2) {
			early += x.w
		}
	}
	est.PEarly = early / total
	n := float64(len(c))
	spread := 1.0
	if est.LowS > 0 {
		spread = math.Max(0.2, 1-math.Log(est.HighS/est.LowS)/math.Log(16))
	}
	meanSim := simSum / n
	if meanSim == 0 {
		meanSim = 1
	}
	est.Confidence = meanSim * n / (n + 1) * spread
	est.GPUUtil = weightedMean(c, func(r *Record) float32 { return r.GPUUtil })
	est.GPUMemGB = weightedMean(c, func(r *Record) float32 { return r.GPUMemGB })
	est.StepTimeS = weightedMean(c, func(r *Record) float32 { return r.StepTimeS })
	return est
}

// weightedMean averages one figure over the candidates that know it.
func weightedMean(c []candidate, field func(*Record) float32) *float64 {
	var sum, w float64
	for _, x := range c {
		v := float64(field(x.rec))
		if math.IsNaN(v) || v < 0 {
			continue
		}
		sum += v * x.w
		w += x.w
	}
	if w == 0 {
		return nil
	}
	m := sum / w
	return &m
}

// topMatches returns the k most similar candidates, newest first on ties.
func topMatches(c []candidate, k int) []Match {
	idx := make([]int, len(c))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return c[idx[a]].sim > c[idx[b]].sim })
	if len(idx) > k {
		idx = idx[:k]
	}
	out := make([]Match, len(idx))
	for i, j := range idx {
		r := c[j].rec
		out[i] = Match{JobID: r.JobID, Similarity: math.Round(float64(c[j].sim)*1000) / 1000,
			DurationS: float64(r.DurationS), State: r.State.String()}
	}
	return out
}
