// Package diagnose implements `schedmate diagnose`: the root cause of a
// failed job, from its log.
package diagnose

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/failure"
	"github.com/schedmate/schedmate/internal/logtext"
	"github.com/schedmate/schedmate/internal/store"
)

// Options are the inputs of one diagnose run.
type Options struct {
	JobID string
	Log   string
	JSON  bool
	Color bool
	// Context is how many lines around the root line are shown.
	Context int
	// NoLLM keeps the deterministic answer even when llm.enabled is set.
	NoLLM bool
}

// NewCmd returns the diagnose command.
func NewCmd(f *factory.Factory) *cobra.Command {
	opts := Options{}
	cmd := &cobra.Command{
		Use:   "diagnose [JOBID]",
		Short: "Find and classify the root cause of a failed job",
		Long: `Diagnose reads a job's log (found through Slurm, or the history database) or
the file given with --log, locates the first line of the failure that ended it
and classifies it as infrastructure (gpu, nvlink, network, node), framework,
script (cuda out-of-memory is script/oom) or other. A job that did not fail
gets the category "none".`,
		Example: `  schedmate diagnose 123456
  schedmate diagnose --log slurm-123456.out
  schedmate diagnose 123456 --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.JobID = args[0]
			}
			if (opts.JobID == "") == (opts.Log == "") {
				return exitcode.Errorf(exitcode.Usage, "give either a job id or --log FILE")
			}
			opts.JSON = f.JSON
			opts.Color = f.IO.ColorEnabled()
			return run(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Log, "log", "", "diagnose this log file instead of a job's")
	cmd.Flags().IntVar(&opts.Context, "context", 3, "lines of context shown around the root line")
	cmd.Flags().BoolVar(&opts.NoLLM, "no-llm", false, "never ask the LLM, even when llm.enabled is set")
	return cmd
}

func run(ctx context.Context, f *factory.Factory, opts Options) error {
	path := opts.Log
	if path == "" {
		var err error
		path, err = jobLog(ctx, f, opts.JobID)
		if err != nil {
			return err
		}
	}
	fo := failure.DefaultOptions()
	fo.ContextLines = max(opts.Context, 0)
	d, err := failure.DiagnoseFile(path, fo)
	if err != nil {
		return logError(err)
	}
	assist := refineVerdict(ctx, f, opts, path, d)
	if opts.JSON {
		return writeJSON(f.IO.Out, opts.JobID, path, d, assist)
	}
	_, err = fmt.Fprint(f.IO.Out, render(f.IO.Renderer(), opts.JobID, path, d)+renderAssist(f.IO.Renderer(), assist))
	return err
}

// logError maps a log reading error to its exit code.
func logError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return exitcode.New(exitcode.NotFound, err)
	case errors.Is(err, logtext.ErrEmpty), errors.Is(err, logtext.ErrNotText), errors.Is(err, fs.ErrPermission):
		return exitcode.New(exitcode.DataErr, err)
	}
	return exitcode.New(exitcode.DataErr, err)
}

// jobLog finds a job's log: Slurm's record first (stderr, then stdout),
// then the history database.
func jobLog(ctx context.Context, f *factory.Factory, id string) (string, error) {
	var candidates []string
	var slurmErr error
	if client, err := f.Slurm(); err != nil {
		slurmErr = err
	} else if job, err := client.Job(ctx, id); err != nil {
		slurmErr = err
	} else {
		candidates = append(candidates, job.StdErr, job.StdOut)
	}
	if path := firstLog(candidates); path != "" {
		return path, nil
	}
	st, err := f.StoreReadOnly()
	if err == nil {
		job, gerr := st.GetJob(id)
		switch {
		case gerr == nil:
			if path := firstLog([]string{job.StdErr, job.StdOut}); path != "" {
				return path, nil
			}
			return "", exitcode.Errorf(exitcode.NotFound, "job %s: no readable log (stderr %q, stdout %q)", id, job.StdErr, job.StdOut)
		case !errors.Is(gerr, store.ErrNotFound):
			return "", factory.StoreError(gerr)
		}
	}
	if slurmErr != nil {
		return "", exitcode.Errorf(exitcode.NotFound, "job %s: not found in Slurm (%v) or in the history", id, slurmErr)
	}
	return "", exitcode.Errorf(exitcode.NotFound, "job %s: no log file found", id)
}

// firstLog returns the first candidate that is an existing non-empty file.
func firstLog(paths []string) string {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			return p
		}
	}
	return ""
}
