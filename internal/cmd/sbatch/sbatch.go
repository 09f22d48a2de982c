// Package sbatch implements `schedmate sbatch`: print a job's estimate, then
// submit it with the real sbatch, passing sbatch's output and exit status
// through unchanged.
package sbatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/cmd/estimate"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/runner"
)

// estimateBudget bounds the estimate before submitting: a slow history must
// not delay the submission.
const estimateBudget = 3 * time.Second

// NewCmd returns the sbatch command.
func NewCmd(f *factory.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "sbatch [sbatch options] SCRIPT [args...]",
		Short: "Submit a job with sbatch and print its estimate",
		Long: `Estimates the batch script as 'schedmate estimate' does, runs the real
sbatch with the same arguments and, once sbatch has accepted the job, prints
the estimate on stderr. The submission never depends on the estimate: if
estimating fails, a note says why and the job is submitted anyway. sbatch's stdout and exit status
are passed through unchanged.`,
		Example: `  schedmate sbatch -p gpu --gres=gpu:4 train.sbatch
  schedmate sbatch --parsable train.sbatch --epochs 3`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
				return cmd.Help()
			}
			return run(cmd.Context(), f, args)
		},
	}
}

func run(ctx context.Context, f *factory.Factory, args []string) error {
	line := estimateLine(ctx, f, args)
	res, err := f.Runner.Run(ctx, runner.Cmd{Name: "sbatch", Args: args})
	if err == nil {
		// Only a job sbatch accepted gets an estimate: a line next to
		// sbatch's refusal would read as if the job had been queued.
		fmt.Fprintln(f.IO.ErrOut, line)
	}
	f.IO.Out.Write(res.Stdout)
	f.IO.ErrOut.Write(res.Stderr)
	var rerr *runner.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rerr) && rerr.ExitCode > 0:
		return exitcode.Silent(exitcode.Code(rerr.ExitCode)) // sbatch has said why on stderr
	case errors.Is(err, runner.ErrNotFound):
		return exitcode.New(exitcode.Unavailable, fmt.Errorf("submit: sbatch not found: %w", err))
	default:
		return fmt.Errorf("submit: %w", err)
	}
}

// estimateLine is the line to print for a submission: its estimate, or why
// there is none.
func estimateLine(ctx context.Context, f *factory.Factory, args []string) string {
	req, err := estimate.Request(args)
	if err != nil {
		return fmt.Sprintf("schedmate: no estimate: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, estimateBudget)
	defer cancel()
	adv, err := estimate.Run(ctx, f, req)
	if err != nil {
		return fmt.Sprintf("schedmate: no estimate: %v", err)
	}
	return advisor.Comment(adv.Estimate)
}
