// Package top implements `schedmate top`: a live view of running jobs and
// their training progress, or one snapshot for scripts.
package top

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/cmd/metrics"
	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/iostreams"
	logmetrics "github.com/schedmate/schedmate/internal/metrics"
	topview "github.com/schedmate/schedmate/internal/tui/top"
	"github.com/schedmate/schedmate/slurm"
)

// Options are the inputs of one `schedmate top` run.
type Options struct {
	IO        *iostreams.IOStreams
	JSON      bool
	Slurm     func() (slurm.Client, error)
	Config    func() (*config.Config, error)
	LogToFile func(path string)
	Logger    func() *slog.Logger
	Now       func() time.Time

	All      bool
	User     string
	Interval time.Duration
	Once     bool
}

// NewCmd returns the `top` command.
func NewCmd(f *factory.Factory) *cobra.Command {
	opts := &Options{IO: f.IO, Slurm: f.Slurm, Config: f.Config, LogToFile: f.LogToFile, Logger: f.Logger, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Live view of running jobs and their training progress",
		Long: `Show running jobs with what their logs say: step/total with a progress bar,
step time with a trend sparkline, throughput, ETA, and flags for a slowdown
(SLOW), a stall (STALL), an error line after the last progress line (ERR)
or an unreadable log (LOG).

Keys: s sort, / filter, enter details, ↑/↓ move, r refresh, q quit.
With --once, --json, or when stdout is not a terminal, one snapshot is
printed (a table, or a JSON array) and the command exits. While the live
view owns the screen, diagnostics go to a log file (log.file, or
schedmate-top.log in the user's cache directory).`,
		Example: `  schedmate top
  schedmate top --all --interval 5s
  schedmate top -u alice --once
  schedmate top --json | jq '.[] | select(.progress.stalled)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = f.JSON
			if opts.All && opts.User != "" {
				return exitcode.Errorf(exitcode.Usage, "--all and --user cannot be used together")
			}
			if cmd.Flags().Changed("interval") && opts.Interval < 500*time.Millisecond {
				return exitcode.Errorf(exitcode.Usage, "--interval must be at least 500ms")
			}
			return opts.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&opts.All, "all", "a", false, "show the jobs of all users")
	cmd.Flags().StringVarP(&opts.User, "user", "u", "", "show the jobs of this user (default: you)")
	cmd.Flags().DurationVar(&opts.Interval, "interval", 0, "refresh interval (default metrics.refresh, 3s)")
	cmd.Flags().BoolVar(&opts.Once, "once", false, "print one snapshot and exit")
	return cmd
}

// Run shows the live view, or prints one snapshot.
func (o *Options) Run(ctx context.Context) error {
	cfg, err := o.Config()
	if err != nil {
		return err
	}
	client, err := o.Slurm()
	if err != nil {
		return err
	}
	who := o.User
	if !o.All && who == "" {
		if who, err = currentUser(); err != nil {
			return err
		}
	}
	live := !o.Once && !o.JSON && o.IO.IsStdoutTTY()
	if live {
		o.LogToFile(logPath(cfg))
	}
	logger := o.Logger()
	collector := NewCollector(client)
	source := func(ctx context.Context) topview.Snapshot {
		snap := collector.Collect(ctx, slurm.QueueFilter{User: who, States: []string{"RUNNING"}, All: o.All}, metrics.ExtractOptions(cfg, o.Now()))
		if snap.Err != nil {
			logger.Warn("refresh failed", "err", snap.Err)
		}
		for _, r := range snap.Rows {
			if r.LogError != "" {
				logger.Debug("log not readable", "job", r.JobID, "err", r.LogError)
			}
		}
		return snap
	}
	if !live {
		snap := source(ctx)
		if snap.Err != nil {
			return exitcode.New(exitcode.Unavailable, snap.Err)
		}
		topview.Sort(snap.Rows, topview.SortJobID)
		if o.JSON {
			return topview.WriteJSON(o.IO.Out, snap.Rows)
		}
		width := 1 << 10 // every column when piped
		if o.IO.IsStdoutTTY() {
			width = o.IO.TerminalWidth()
		}
		return topview.WriteTable(o.IO.Out, snap.Rows, width)
	}
	interval := o.Interval
	if interval == 0 {
		interval = cfg.Metrics.Refresh
	}
	scope := "all users"
	if !o.All {
		scope = "user " + who
	}
	model := topview.New(topview.Options{Source: source, Interval: interval, Scope: scope, Renderer: o.IO.Renderer()})
	prog := tea.NewProgram(model, tea.WithAltScreen(), tea.WithInput(o.IO.In), tea.WithOutput(o.IO.Out), tea.WithContext(ctx))
	if _, err := prog.Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("run live view: %w", err)
	}
	return nil
}

// Collector reads the progress of running jobs for the view. A job's
// output file does not change while it runs, so the paths Slurm had to be
// asked for (squeue cannot print them) are remembered across refreshes:
// each job costs one scontrol call in the life of the view, not one per
// refresh.
type Collector struct {
	client slurm.Client

	mu    sync.Mutex
	paths map[string]string
}

// NewCollector returns a Collector that asks client.
func NewCollector(client slurm.Client) *Collector {
	return &Collector{client: client, paths: map[string]string{}}
}

// Collect lists the jobs and reads the progress of each from its log.
func (c *Collector) Collect(ctx context.Context, filter slurm.QueueFilter, opts logmetrics.Options) topview.Snapshot {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	snap := topview.Snapshot{Time: now}
	jobs, err := c.client.Queue(ctx, filter)
	if err != nil {
		snap.Err = fmt.Errorf("list running jobs: %w", err)
		return snap
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[string]string, len(jobs))
	for _, j := range jobs {
		row := topview.Row{JobID: j.ID, Name: j.Name, User: j.User, Nodes: j.NodeList, GPUs: j.GPUs, Log: j.StdOut}
		if !j.Start.IsZero() && now.After(j.Start) {
			row.Elapsed = now.Sub(j.Start)
		}
		if row.Log == "" {
			row.Log = c.outputPath(ctx, j.ID)
		}
		seen[j.ID] = row.Log
		if row.Log == "" {
			row.LogError = "Slurm reports no output file"
		} else if rep, err := logmetrics.ExtractFile(row.Log, opts); err != nil {
			row.LogError = err.Error()
		} else {
			row.Progress = rep
		}
		snap.Rows = append(snap.Rows, row)
	}
	for id, path := range seen {
		if path == "" {
			delete(seen, id) // ask again next time
		}
	}
	c.paths = seen // jobs that ended are forgotten
	return snap
}

// outputPath is the job's output file, remembered or asked of Slurm; ""
// when Slurm does not say.
func (c *Collector) outputPath(ctx context.Context, id string) string {
	if path, ok := c.paths[id]; ok {
		return path
	}
	job, err := c.client.Job(ctx, id)
	if err != nil {
		return ""
	}
	return job.StdOut
}

// currentUser is the login name whose jobs are shown by default.
func currentUser() (string, error) {
	if u := os.Getenv("USER"); u != "" {
		return u, nil
	}
	u, err := user.Current()
	if err != nil {
		return "", exitcode.Errorf(exitcode.Usage, "cannot tell who you are (%v); use --user or --all", err)
	}
	return u.Username, nil
}

// logPath is where diagnostics go while the live view owns the screen.
func logPath(cfg *config.Config) string {
	if cfg.Log.File != "" {
		return cfg.Log.File
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "schedmate")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return filepath.Join(os.TempDir(), fmt.Sprintf("schedmate-top-%d.log", os.Getuid()))
	}
	return filepath.Join(dir, "schedmate-top.log")
}
