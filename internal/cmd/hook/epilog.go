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
)

// Recovery acts on a job that has ended and been recorded: diagnosis,
// requeue, node checks. It must honour ctx's deadline.
type Recovery func(ctx context.Context, job *store.Job) error

func newEpilogCmd(f *factory.Factory, recovery Recovery) *cobra.Command {
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
			return runEpilog(cmd.Context(), f, recovery)
		},
	}
	failOpen(f, cmd)
	return cmd
}

func runEpilog(ctx context.Context, f *factory.Factory, recovery Recovery) error {
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
	// Recording gets half the deadline at most, so that recovery always
	// has time to run.
	captureCtx, cancelCapture := context.WithTimeout(ctx, env.deadline/2)
	job, out, err := history.CaptureEnd(captureCtx, env.open, env.spoolDir(), end)
	cancelCapture()
	reportCapture(f, "job "+end.Job.JobID, out)
	if err != nil {
		fmt.Fprintf(f.IO.ErrOut, "schedmate: hook epilog: %v\n", err)
	}
	if recovery == nil {
		return nil
	}
	_, err = bounded(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, recovery(ctx, job) })
	if err != nil {
		return fmt.Errorf("job %s: %w", job.JobID, err)
	}
	return nil
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
