package hook

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/history"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/internal/submitcache"
)

// SubmitRequest is a job as job_submit.lua describes it, before Slurm
// assigns it an id.
type SubmitRequest struct {
	ScriptFile string
	User       string
	UID        string
	WorkDir    string
	Name       string
	Partition  string
	Gres       string
	Nodes      string
	// TimeLimit is the requested limit; zero when none was given.
	TimeLimit time.Duration
	// Argv is the submitting command line, when the site passes it.
	Argv []string
	// Time is when the hook saw the submission.
	Time time.Time
}

// Estimate is what an Estimator found for a submission.
type Estimate struct {
	// Record is the duration estimate kept with the job's history.
	Record *store.EstimateRecord
	// Fingerprint and FingerprintHash identify the workload for retrieval.
	Fingerprint     string
	FingerprintHash string
	// Metadata are extracted workload facts kept with the job.
	Metadata map[string]string
	// Comment becomes the job's admin_comment ("schedmate: est=...").
	Comment string
	// Settings are further job fields for job_submit.lua to set, such as
	// "time_min"; keys are lower-case job_desc field names.
	Settings map[string]string
}

// Estimator estimates a submitted job. It must honour ctx's deadline.
type Estimator func(ctx context.Context, req *SubmitRequest) (*Estimate, error)

// submitOptions are the flags of `hook submit`.
type submitOptions struct {
	req       SubmitRequest
	timeLimit string
	// cacheKey is job_submit.lua's submit cache key; cacheFile its cache.
	cacheKey  string
	cacheFile string
	estimator Estimator
	now       func() time.Time
}

func newSubmitCmd(f *factory.Factory, estimator Estimator) *cobra.Command {
	o := &submitOptions{estimator: estimator, now: time.Now}
	cmd := &cobra.Command{
		Use:   "submit [flags] [-- argv...]",
		Short: "Record a submission and estimate it (called by job_submit.lua)",
		Long: `Called by job_submit.lua for every submitted job. It prints key=value
lines on stdout for the script to apply to the job (admin_comment, and
fields such as time_min when estimates are enabled), and records the
submission so that the job's end can be matched to it.

It answers within hooks.submit_deadline and exits 0 on every error, printing
nothing on stdout then: the job is submitted untouched. Unknown flags are
ignored so that an older schedmate works with a newer job_submit.lua.`,
		Example: `  schedmate hook submit --script-file /var/spool/slurm/job.sh --user alice --uid 1000 \
    --workdir /home/alice/exp --name train --partition gpu --time-limit 120 \
    --gres gpu:4 --nodes 2 --argv train.sbatch --argv --lr=3e-4`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.req.Argv = append(o.req.Argv, args...)
			return runSubmit(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.req.ScriptFile, "script-file", "", "path of the batch script (written by job_submit.lua)")
	fl.StringVar(&o.req.User, "user", "", "submitting user's name")
	fl.StringVar(&o.req.UID, "uid", "", "submitting user's numeric id")
	fl.StringVar(&o.req.WorkDir, "workdir", "", "job's working directory")
	fl.StringVar(&o.req.Name, "name", "", "job name")
	fl.StringVar(&o.req.Partition, "partition", "", "requested partition")
	fl.StringVar(&o.timeLimit, "time-limit", "", "requested time limit in minutes")
	fl.StringVar(&o.req.Gres, "gres", "", "requested generic resources per node, as in --gres")
	fl.StringVar(&o.req.Nodes, "nodes", "", "requested node count")
	fl.StringArrayVar(&o.req.Argv, "argv", nil, "one argument of the submitting command line (repeatable)")
	fl.StringVar(&o.cacheKey, "cache-key", "", "job_submit.lua's key for this submission in the submit answer cache")
	fl.StringVar(&o.cacheFile, "cache-file", "", "the submit answer cache job_submit.lua reads (default: hooks.submit_cache)")
	failOpen(f, cmd)
	return cmd
}

func runSubmit(ctx context.Context, f *factory.Factory, o *submitOptions) error {
	env, err := prepare(f, func(c *config.Config) time.Duration { return c.Hooks.SubmitDeadline })
	if err != nil {
		return err
	}
	if o.cacheFile != "" {
		env.cachePath = o.cacheFile
	}
	ctx, cancel := context.WithTimeout(ctx, env.deadline)
	defer cancel()
	req := o.req
	req.TimeLimit = history.ParseTimeLimit(o.timeLimit)
	req.Time = o.now()

	var est *Estimate
	estimated := true
	if o.estimator != nil {
		// Leave part of the deadline for recording the submission.
		estCtx, cancelEst := context.WithTimeout(ctx, env.deadline*3/5)
		est, err = bounded(estCtx, func(ctx context.Context) (*Estimate, error) { return o.estimator(ctx, &req) })
		cancelEst()
		if err != nil {
			fmt.Fprintf(f.IO.ErrOut, "schedmate: hook submit: estimate: %v\n", err)
			est, estimated = nil, false
		}
	}
	sub := toSubmission(&req, est)
	sub.CacheKey = o.cacheKey
	out, err := history.CaptureSubmission(ctx, env.open, env.places(), sub)
	reportCapture(f, "submission", out)
	if err != nil {
		fmt.Fprintf(f.IO.ErrOut, "schedmate: hook submit: %v\n", err)
	}
	answers := settings(est)
	// The answer is cached only once the submission it will be recorded
	// from is safe, and only when estimating worked (a failure is retried
	// by the next submission).
	if o.cacheKey != "" && estimated && err == nil && ctx.Err() == nil {
		if err := submitcache.New(env.cachePath).Put(o.cacheKey, answers); err != nil {
			fmt.Fprintf(f.IO.ErrOut, "schedmate: hook submit: %v\n", err)
		}
	}
	return writeAnswers(f.IO.Out, answers)
}

func toSubmission(req *SubmitRequest, est *Estimate) *history.Submission {
	sub := &history.Submission{
		UID: req.UID, User: req.User, Name: req.Name, WorkDir: req.WorkDir, Partition: req.Partition,
		Script: history.ScriptPath(req.Argv, req.WorkDir), Argv: req.Argv, TimeLimit: req.TimeLimit, Gres: req.Gres, Nodes: req.Nodes,
		Time: req.Time,
	}
	if est != nil {
		sub.Estimate = est.Record
		sub.Fingerprint, sub.FingerprintHash = est.Fingerprint, est.FingerprintHash
		sub.Metadata = est.Metadata
	}
	return sub
}

// settings returns the key=value lines job_submit.lua applies:
// admin_comment first, then the other settings by key. Keys that are not
// plain field names are dropped and values are kept to one line.
func settings(est *Estimate) []string {
	if est == nil {
		return nil
	}
	var lines []string
	line := func(k, v string) {
		v = strings.Join(strings.Fields(v), " ")
		if v != "" {
			lines = append(lines, k+"="+v)
		}
	}
	line("admin_comment", est.Comment)
	for _, k := range slices.Sorted(maps.Keys(est.Settings)) {
		if isFieldName(k) && k != "admin_comment" {
			line(k, est.Settings[k])
		}
	}
	return lines
}

// writeAnswers prints answer lines for job_submit.lua.
func writeAnswers(w io.Writer, answers []string) error {
	for _, a := range answers {
		if _, err := io.WriteString(w, a+"\n"); err != nil {
			return err
		}
	}
	return nil
}

func isFieldName(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if (c < 'a' || c > 'z') && c != '_' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
