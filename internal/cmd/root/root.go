// Package root assembles schedmate's command tree and runs it.
package root

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/cmd/configcmd"
	"github.com/schedmate/schedmate/internal/cmd/version"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/iostreams"
)

// Command groups shown in `schedmate --help`.
const (
	groupPlan    = "plan"
	groupMonitor = "monitor"
	groupFailure = "failure"
	groupHealth  = "health"
	groupHistory = "history"
	groupHooks   = "hooks"
	groupSetup   = "setup"
)

// NewCmd returns the root command with every subcommand attached.
func NewCmd(f *factory.Factory) *cobra.Command {
	var logLevel string
	var noColor bool
	cmd := &cobra.Command{
		Use:   "schedmate",
		Short: "Semantic-aware helper for Slurm GPU clusters",
		Long: `schedmate reads what Slurm ignores — a job's script, its training log and the
history of jobs like it — to estimate durations at submit time, show live
training progress, find the root cause of failures, requeue jobs hit by
infrastructure faults, and check GPU nodes.`,
		Example: `  schedmate estimate --gres=gpu:4 train.sbatch
  schedmate sbatch train.sbatch
  schedmate top
  schedmate metrics --log slurm-1234.out
  schedmate diagnose 1234
  schedmate health check
  schedmate history list --json`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if noColor {
				f.IO.DisableColor()
			}
			if cmd.Flags().Changed("log-level") {
				f.FlagValues["log.level"] = logLevel
			}
			return nil
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.ConfigFile, "config", "", "read configuration from this file only")
	pf.BoolVar(&f.JSON, "json", false, "print machine-readable JSON on stdout")
	pf.StringVar(&logLevel, "log-level", "warn", "diagnostic log level: debug, info, warn, error")
	pf.BoolVar(&noColor, "no-color", false, "never use colour (also NO_COLOR=1)")
	_ = cmd.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))

	cmd.AddGroup(
		&cobra.Group{ID: groupPlan, Title: "Plan jobs:"},
		&cobra.Group{ID: groupMonitor, Title: "Watch running jobs:"},
		&cobra.Group{ID: groupFailure, Title: "Understand failures:"},
		&cobra.Group{ID: groupHealth, Title: "Check nodes:"},
		&cobra.Group{ID: groupHistory, Title: "Job history:"},
		&cobra.Group{ID: groupHooks, Title: "Run by Slurm:"},
		&cobra.Group{ID: groupSetup, Title: "Setup and help:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			cmd.AddCommand(c)
		}
	}
	add(groupSetup, version.NewCmd(f), configcmd.NewCmd(f), newExitCodesCmd())
	addDomainCommands(f, add)
	cmd.SetHelpCommandGroupID(groupSetup)
	cmd.SetCompletionCommandGroupID(groupSetup)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitcode.New(exitcode.Usage, fmt.Errorf("%w\nSee '%s --help'.", err, c.CommandPath()))
	})
	return cmd
}

func newExitCodesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "Explain schedmate's exit codes",
		Long:  exitcode.Describe(),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), exitcode.Describe())
			return err
		},
	}
}

// Main runs schedmate with the process's arguments and streams and returns
// the exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := factory.New(iostreams.System())
	return Run(ctx, f, os.Args[1:])
}

// Run executes one command line against a factory and returns its exit code.
func Run(ctx context.Context, f *factory.Factory, args []string) int {
	defer f.Close()
	cmd := NewCmd(f)
	cmd.SetArgs(args)
	cmd.SetIn(f.IO.In)
	cmd.SetOut(f.IO.Out)
	cmd.SetErr(f.IO.ErrOut)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return int(exitcode.OK)
	}
	code := exitcode.Of(err)
	if code == exitcode.Error && isUsageError(err) {
		code = exitcode.Usage
	}
	if exitcode.IsSilent(err) {
		return int(code)
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(f.IO.ErrOut, "schedmate: interrupted")
		return 130
	}
	fmt.Fprintf(f.IO.ErrOut, "schedmate: %v\n", err)
	return int(code)
}

// isUsageError recognises cobra's own argument errors, which it returns as
// plain errors.
func isUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
