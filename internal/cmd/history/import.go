package history

import (
	"fmt"
	"io"
	"os"

	"github.com/charmbracelet/bubbles/progress"
	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	jobhistory "github.com/schedmate/schedmate/internal/history"
	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/store"
	"github.com/schedmate/schedmate/slurm"
)

func newImportCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Bootstrap the history from earlier jobs",
	}
	cmd.AddCommand(newImportSacctCmd(f))
	return cmd
}

func newImportSacctCmd(f *factory.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "sacct [FILE|-]",
		Short: "Import ended jobs from sacct --parsable2 output",
		Long: `Reads the output of sacct --parsable2 (with its header line) from FILE or
standard input and adds the jobs that have ended to the history, and to the
index that duration estimates retrieve from. Job steps and unfinished jobs
are skipped. Jobs already recorded by the epilog keep
their facts; accounting only fills the gaps, so importing again is harmless.`,
		Example: `  sacct --parsable2 --allusers --starttime now-30days \
    --format JobID,JobName,User,Account,Partition,State,ExitCode,Submit,Start,End,Timelimit,NodeList,WorkDir \
    | schedmate history import sacct -
  schedmate history import sacct jobs.txt`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "-"
			if len(args) == 1 {
				name = args[0]
			}
			return runImportSacct(f, name)
		},
	}
}

func runImportSacct(f *factory.Factory, name string) error {
	var in io.Reader = f.IO.In
	if name != "-" {
		file, err := os.Open(name)
		if err != nil {
			return exitcode.New(exitcode.NotFound, fmt.Errorf("open sacct output: %w", err))
		}
		defer file.Close()
		in = file
	} else if f.IO.IsStdinTTY() {
		return exitcode.Errorf(exitcode.Usage, "give a file, or pipe sacct --parsable2 output into standard input")
	}
	jobs, err := slurm.ParseSacct(in)
	if err != nil {
		return exitcode.New(exitcode.DataErr, fmt.Errorf("read sacct output %s: %w", name, err))
	}
	st, err := f.Store()
	if err != nil {
		return err
	}
	if path, err := f.StorePath(); err == nil {
		drainSpool(f, spool.ForStore(path))
	}
	index := func(batch []*store.Job) error { return advisor.IndexJobs(st, batch...) }
	res, err := jobhistory.Import(st, jobs, index, progressBar(f))
	if err != nil {
		return factory.StoreError(err)
	}
	if f.JSON {
		return writeJSON(f.IO.Out, res)
	}
	_, err = fmt.Fprintf(f.IO.Out, "imported %d rows from %s: %d new, %d updated, %d unchanged, %d skipped (steps or unfinished jobs)\n",
		len(jobs), name, res.Added, res.Updated, res.Unchanged, res.Skipped)
	return err
}

// progressBar draws the import's progress on stderr when it is a terminal.
func progressBar(f *factory.Factory) func(done, total int) {
	if !f.IO.IsStderrTTY() {
		return nil
	}
	bar := progress.New(progress.WithDefaultGradient(), progress.WithWidth(40))
	return func(done, total int) {
		fmt.Fprintf(f.IO.ErrOut, "\r%s %d/%d", bar.ViewAs(float64(done)/float64(total)), done, total)
		if done == total {
			fmt.Fprintln(f.IO.ErrOut)
		}
	}
}
