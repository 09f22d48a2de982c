package advisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/fingerprint"
	"github.com/schedmate/schedmate/slurm"
)

// SubmitRequest is a job about to be submitted, as the submit hook or the
// sbatch wrapper sees it.
type SubmitRequest struct {
	// Job holds what the submission says (user, name, partition, working
	// directory, limit, resources); empty fields are filled from the
	// script's #SBATCH options.
	Job JobInfo
	// Script is the batch script's path; ScriptBody its content when the
	// caller already has it.
	Script     string
	ScriptBody []byte
	// Args are the script's arguments.
	Args []string
	// Options are sbatch options given on the command line (long names);
	// they override the script's #SBATCH options.
	Options map[string]string
	// Access restricts file reads to what the job's user may read (set it
	// when running as root).
	Access *fingerprint.Access
	// Endpoint, when set, lets the similarity search compare the embedding
	// endpoint's vectors. Interactive commands only: the hooks never set it.
	Endpoint *Endpoint
}

// Policy says which job fields the submit hook may set from an estimate.
type Policy struct {
	// SetTimeMin suggests time_min (minutes) from the high estimate, so the
	// backfill scheduler may start the job in a shorter window.
	SetTimeMin bool
	// SetNice suggests a nice value that favours shorter jobs.
	SetNice bool
	// MinConfidence is the least confidence for a suggestion (default 0.5).
	MinConfidence float64
}

// SubmitAdvice is the advisor's answer for one submission.
type SubmitAdvice struct {
	Estimate        Estimate
	Fingerprint     *fingerprint.Fingerprint // nil when the script could not be read
	FingerprintText string
	FingerprintHash string
	// Metadata are the workload facts to keep with the job, including its
	// launch command and git branch (see the Meta* keys).
	Metadata map[string]string
	// Cached is true when the fingerprint came from the version manager.
	Cached bool
	// Comment is the admin comment: "schedmate: est=...".
	Comment string
	// Settings are job fields to set ("time_min", "nice"), per Policy.
	Settings map[string]string
	// Embedding labels the vectors the similarity search compared
	// (EmbeddingBuiltin or EndpointLabel) when an endpoint was asked for;
	// empty otherwise, or when no search ran.
	Embedding string
	// Notes say what was skipped.
	Notes []string
}

// ForSubmit fingerprints a submission (reusing the cached extraction of an
// unchanged resubmission), estimates it from history and prepares the
// comment and settings for the submit hook. A script that cannot be read
// still gets an estimate from the submission's own fields. It stops early
// when ctx ends.
func ForSubmit(ctx context.Context, kv KV, req SubmitRequest, pol Policy, opts Options) (*SubmitAdvice, error) {
	adv := &SubmitAdvice{Metadata: map[string]string{}}
	job := req.Job
	body, err := scriptBody(req)
	if err != nil {
		adv.Notes = append(adv.Notes, err.Error())
	} else {
		branch, commit := fingerprint.GitHead(job.WorkDir)
		key := SubmitKey(job.User, job.WorkDir, req.Script, req.Args, branch)
		fp, cached := cachedFingerprint(kv, key, body, commit)
		if !cached {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("estimate: %w", err)
			}
			fp, err = fingerprint.Extract(fingerprint.Input{
				Script: req.Script, ScriptBody: body, Args: req.Args, WorkDir: job.WorkDir, Access: req.Access,
			})
			if err != nil {
				adv.Notes = append(adv.Notes, err.Error())
			} else if err := cacheFingerprint(kv, key, body, fp); err != nil {
				adv.Notes = append(adv.Notes, fmt.Sprintf("cache fingerprint: %v", err))
			}
		}
		if fp != nil {
			adv.Fingerprint, adv.Cached = fp, cached
			adv.FingerprintText, adv.FingerprintHash = fp.Text(), fp.Hash
			adv.Notes = append(adv.Notes, fp.Notes...)
			job = withFingerprint(job, fp)
		}
	}
	options := map[string]string{}
	if adv.Fingerprint != nil {
		maps.Copy(options, adv.Fingerprint.Options)
	}
	maps.Copy(options, req.Options)
	job = withOptions(job, options)
	for k, v := range job.Metadata {
		adv.Metadata[k] = v
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("estimate: %w", err)
	}
	est, ret, err := advise(ctx, kv, &job, opts, req.Endpoint)
	if err != nil {
		return nil, err
	}
	adv.Estimate, adv.Embedding = est, ret.Embedding
	if ret.Note != "" {
		adv.Notes = append(adv.Notes, ret.Note)
	}
	adv.Comment = Comment(est)
	adv.Settings = suggestions(est, job.TimeLimitS, pol)
	return adv, nil
}

// scriptBody returns the script's content, read within bounds and, when
// req.Access is set, only if the job's user may read it.
func scriptBody(req SubmitRequest) ([]byte, error) {
	if req.ScriptBody != nil {
		return req.ScriptBody, nil
	}
	if req.Script == "" {
		return nil, errors.New("no batch script")
	}
	return fingerprint.ReadScript(req.Script, req.Job.WorkDir, req.Access, fingerprint.Limits{})
}

// withFingerprint fills a job's description from its fingerprint: the
// launch command, branch and workload metadata.
func withFingerprint(j JobInfo, fp *fingerprint.Fingerprint) JobInfo {
	meta := make(map[string]string, len(j.Metadata)+len(fp.Metadata)+3)
	for k, v := range fp.Metadata {
		meta[k] = v
	}
	for k, v := range j.Metadata {
		meta[k] = v
	}
	set := func(k, v string) {
		if v != "" {
			meta[k] = v
		}
	}
	set(MetaCommand, fp.Command)
	set(MetaGitBranch, fp.GitBranch)
	set(MetaGitCommit, fp.GitCommit)
	j.Metadata = meta
	j.Command, j.GitBranch = fp.Command, fp.GitBranch
	return j
}

// withOptions fills the fields the submission left empty from sbatch
// options (long names).
func withOptions(j JobInfo, opt map[string]string) JobInfo {
	fill := func(dst *string, key string) {
		if *dst == "" {
			*dst = opt[key]
		}
	}
	fill(&j.Name, "job-name")
	fill(&j.Partition, "partition")
	fill(&j.Account, "account")
	fill(&j.QOS, "qos")
	if j.TimeLimitS == 0 {
		if d, err := slurm.ParseDuration(opt["time"]); err == nil {
			j.TimeLimitS = d.Seconds()
		}
	}
	if j.NumNodes == 0 {
		j.NumNodes, _ = strconv.Atoi(strings.SplitN(opt["nodes"], "-", 2)[0])
	}
	if j.GPUs == 0 {
		j.GPUs = gpuCount(opt)
	}
	return j
}

// gpuCount reads the GPUs requested by #SBATCH --gpus, --gpus-per-node (per
// node, times nodes) or --gres=gpu[:type]:N.
func gpuCount(opt map[string]string) int {
	last := func(s string) int {
		i := strings.LastIndexByte(s, ':')
		n, _ := strconv.Atoi(s[i+1:])
		return n
	}
	if v := opt["gpus"]; v != "" {
		return last(v)
	}
	nodes := max(1, atoi(opt["nodes"]))
	if v := opt["gpus-per-node"]; v != "" {
		return last(v) * nodes
	}
	for _, g := range strings.Split(opt["gres"], ",") {
		if strings.HasPrefix(g, "gpu") {
			return last(g) * nodes
		}
	}
	return 0
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.SplitN(s, "-", 2)[0])
	return n
}

// Advise estimates a job: the admission analyzer first (the user's earlier
// jobs with the same working directory, command and branch), then
// similar-job retrieval and the fallback chain.
func Advise(kv KV, j *JobInfo, opts Options) (Estimate, error) {
	est, _, err := advise(context.Background(), kv, j, opts, nil)
	return est, err
}

// advise is Advise whose similarity search may compare the vectors of an
// embedding endpoint (nil: the built-in embedding only); it says which
// embedding the search used.
func advise(ctx context.Context, kv KV, j *JobInfo, opts Options, ep *Endpoint) (Estimate, retrieval, error) {
	opts = opts.withDefaults()
	q := QueryOf(j)
	if key := ResubmitKey(j); key != 0 {
		recs, err := resubmissions(kv, key, opts.Pool)
		if err != nil {
			return Estimate{}, retrieval{}, err
		}
		if len(recs) > 0 {
			return fromResubmissions(q, recs, opts), retrieval{}, nil
		}
	}
	ix, err := Load(kv, q)
	if err != nil {
		return Estimate{}, retrieval{}, err
	}
	var ret retrieval
	if ep != nil {
		ret = ep.retrieve(ctx, kv, ix, &q, j)
	}
	return ix.Estimate(q, opts), ret, nil
}

// fromResubmissions estimates from the earlier runs of the same job.
func fromResubmissions(q Query, recs []Record, opts Options) Estimate {
	c := make([]candidate, len(recs))
	w := 1.0
	for i := range recs {
		c[i] = candidate{rec: &recs[i], sim: 1, w: w}
		w *= opts.Decay
	}
	est := summarise(c, opts)
	est.Source = SourceResubmission
	est.Matches = topMatches(c, opts.TopK)
	return est
}

// Comment renders an estimate as the job's admin comment.
func Comment(e Estimate) string {
	if e.Source == SourceNone {
		return "schedmate: est=unknown"
	}
	return fmt.Sprintf("schedmate: est=%s range=%s-%s src=%s conf=%.2f p_early=%.2f",
		FormatSeconds(e.EstimateS), FormatSeconds(e.LowS), FormatSeconds(e.HighS), e.Source, e.Confidence, e.PEarly)
}

// FormatSeconds renders a duration compactly: 45s, 12m, 3h05m, 2d04h.
func FormatSeconds(s float64) string {
	d := time.Duration(math.Round(math.Max(s, 0))) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

// suggestions derives time_min and nice from a confident estimate.
func suggestions(e Estimate, limitS float64, pol Policy) map[string]string {
	minConf := pol.MinConfidence
	if minConf <= 0 {
		minConf = 0.5
	}
	out := map[string]string{}
	if e.Source == SourceNone || e.Confidence < minConf || e.EstimateS <= 0 {
		return out
	}
	if pol.SetTimeMin {
		// Leave headroom over the high estimate; never above the limit.
		minutes := int(math.Ceil(e.HighS * 1.2 / 60))
		if limitS > 0 {
			minutes = min(minutes, int(limitS/60))
		}
		if minutes >= 1 {
			out["time_min"] = strconv.Itoa(minutes)
		}
	}
	if pol.SetNice {
		out["nice"] = strconv.Itoa(Nice(e.EstimateS))
	}
	return out
}

// Nice maps an expected run time to a Slurm nice value favouring short jobs
// (shortest job first): 0 up to an hour, then 100 more per doubling, at
// most 1000.
func Nice(estimateS float64) int {
	if estimateS <= 3600 {
		return 0
	}
	return min(1000, int(math.Round(100*math.Log2(estimateS/3600))))
}
