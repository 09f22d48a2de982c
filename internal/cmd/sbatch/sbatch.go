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
		Short: "Print a job's estimate, then submit it with sbatch",
		Long: `Estimates the batch script as 'schedmate estimate' does and prints the
estimate on stderr, then runs the real sbatch with the same arguments. The
submission never depends on the estimate: if estimating fails, a warning is
printed and the job is submitted anyway. sbatch's stdout and exit status
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
	if req, err := estimate.Request(args); err != nil {
		fmt.Fprintf(f.IO.ErrOut, "schedmate: no estimate: %v\n", err)
	} else {
		ectx, cancel := context.WithTimeout(ctx, estimateBudget)
		adv, err := estimate.Run(ectx, f, req)
		cancel()
		if err != nil {
			fmt.Fprintf(f.IO.ErrOut, "schedmate: no estimate: %v\n", err)
		} else {
			fmt.Fprintln(f.IO.ErrOut, advisor.Comment(adv.Estimate))
		}
	}
	res, err := f.Runner.Run(ctx, runner.Cmd{Name: "sbatch", Args: args})
	f.IO.Out.Write(res.Stdout)
	f.IO.ErrOut.Write(res.Stderr)
	var rerr *runner.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rerr) && rerr.ExitCode > 0:
		return exitcode.New(exitcode.Code(rerr.ExitCode), fmt.Errorf("sbatch exited with status %d", rerr.ExitCode))
	case errors.Is(err, runner.ErrNotFound):
		return exitcode.New(exitcode.Unavailable, fmt.Errorf("submit: sbatch not found: %w", err))
	default:
		return fmt.Errorf("submit: %w", err)
	}
}
