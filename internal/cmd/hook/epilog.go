package hook

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/history"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/internal/submitcache"
	"github.com/schedmate/schedmate/slurm"
)

// Recovery acts on a job that has ended and been recorded: diagnosis,
// requeue, node checks. It must honour ctx's deadline.
type Recovery func(ctx context.Context, job *store.Job) error

// Reestimator estimates a resubmission of a job that has ended and been
// recorded. It must honour ctx's deadline.
type Reestimator func(ctx context.Context, job *store.Job) (*Estimate, error)

func newEpilogCmd(f *factory.Factory, recovery Recovery, reestimate Reestimator) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "epilog",
		Short: "Record a job's end and act on failures (EpilogSlurmctld)",
		Long: `Run by slurmctld as EpilogSlurmctld when a job ends. It reads the job from
the environment Slurm sets (SLURM_JOB_ID, SLURM_JOB_EXIT_CODE2, ...), records
its end in the history matched to its submission, then runs the failure
steps, all within hooks.epilog_deadline. It always exits 0.`,
		Example: `  # slurm.conf
  EpilogSlurmctld=/usr/libexec/schedmate/epilog.sh   # runs: schedmate hook epilog`,
		Args: cobra.ArbitraryArgs, // checked in RunE: a hook never fails on usage
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				fmt.Fprintf(f.IO.ErrOut, "schedmate: hook epilog: ignoring arguments %q\n", args)
			}
			return runEpilog(cmd.Context(), f, recovery, reestimate)
		},
	}
	failOpen(f, cmd)
	return cmd
}

func runEpilog(ctx context.Context, f *factory.Factory, recovery Recovery, reestimate Reestimator) error {
	env, err := prepare(f, func(c *config.Config) time.Duration { return c.Hooks.EpilogDeadline })
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, env.deadline)
	defer cancel()
	end, err := history.EndFromEnv(environMap(f.Environ))
	if err != nil {
		return err
	}
	completeFromSlurm(ctx, f, end, env.deadline/4)
	// Recording gets half the deadline at most, so that recovery always
	// has time to run.
	captureCtx, cancelCapture := context.WithTimeout(ctx, env.deadline/2)
	job, out, err := history.CaptureEnd(captureCtx, env.open, env.places(), end)
	cancelCapture()
	f.ReleaseStore() // the later steps open it briefly; other epilogs are waiting
	reportCapture(f, "job "+end.Job.JobID, out)
	if err != nil {
		fmt.Fprintf(f.IO.ErrOut, "schedmate: hook epilog: %v\n", err)
	}
	if recovery != nil {
		_, err = bounded(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, recovery(ctx, job) })
		if err != nil {
			fmt.Fprintf(f.IO.ErrOut, "schedmate: hook epilog: job %s: %v\n", job.JobID, err)
		}
	}
	if reestimate != nil && out.Matched != nil && out.Matched.CacheKey != "" && ctx.Err() == nil {
		if err := refreshAnswer(ctx, env, reestimate, job, out.Matched.CacheKey); err != nil {
			fmt.Fprintf(f.IO.ErrOut, "schedmate: hook epilog: job %s: refresh submit cache: %v\n", job.JobID, err)
		}
	}
	return nil
}

// refreshAnswer re-estimates the job that ended, now part of the history,
// and stores the answer under its submission's cache key, so that the next
// resubmission is answered with an estimate that includes this run.
func refreshAnswer(ctx context.Context, env hookEnv, reestimate Reestimator, job *store.Job, key string) error {
	est, err := bounded(ctx, func(ctx context.Context) (*Estimate, error) { return reestimate(ctx, job) })
	if err != nil {
		return err
	}
	if err := submitcache.New(env.cachePath).Put(key, settings(est)); err != nil {
		return err
	}
	st, err := env.open()
	if err != nil {
		return err
	}
	if est == nil {
		return nil
	}
	return history.RefreshTemplate(st, key, est.Record)
}

// environMap turns KEY=VALUE pairs into a map; later pairs win.
func environMap(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// completeFromSlurm asks slurmctld, within limit, for what the environment
// lacks (the final state name, the times) before the end is recorded, so
// that an end that goes to the spool is as complete as one that reaches
// the database. Without an answer the end is recorded from the environment.
func completeFromSlurm(ctx context.Context, f *factory.Factory, end *history.End, limit time.Duration) {
	cluster, err := f.Slurm()
	if err != nil {
		f.Logger().Info("job's end not completed from slurm", "job", end.Job.JobID, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	sj, err := bounded(ctx, func(ctx context.Context) (*slurm.Job, error) { return cluster.Job(ctx, end.SlurmID()) })
	if err != nil {
		f.Logger().Info("job's end not completed from slurm", "job", end.Job.JobID, "err", err)
		return
	}
	end.CompleteFromSlurm(sj)
}
