// Package metrics implements `schedmate metrics`: the training progress of
// one job read from the end of its log.
package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/internal/llm"
	"github.com/schedmate/schedmate/internal/llmassist"
	logmetrics "github.com/schedmate/schedmate/internal/metrics"
	"github.com/schedmate/schedmate/slurm"
)

// Options are the inputs of one `schedmate metrics` run.
type Options struct {
	IO     *iostreams.IOStreams
	JSON   bool
	Slurm  func() (slurm.Client, error)
	Config func() (*config.Config, error)
	Now    func() time.Time
	// LLM returns the optional LLM client; nil means the layer is off.
	LLM func() (*llm.Client, error)

	JobID   string
	LogPath string
	Stderr  bool
	Lines   int
	NoLLM   bool
}

// NewCmd returns the `metrics` command.
func NewCmd(f *factory.Factory) *cobra.Command {
	opts := &Options{IO: f.IO, Slurm: f.Slurm, Config: f.Config, Now: time.Now, LLM: f.LLM}
	cmd := &cobra.Command{
		Use:   "metrics [<jobid>]",
		Short: "Show a job's training progress read from its log",
		Long: `Read the end of a job's log and report its training progress: step time,
throughput, step and total steps, loss, ETA, and whether it slowed down or
stalled. The log is found through Slurm (the job's StdOut) unless --log is
given. A log without any training progress line gives "unknown" (null in
--json), never a guess.`,
		Example: `  schedmate metrics 4242
  schedmate metrics --log slurm-4242.out --json
  schedmate metrics 4242 --stderr --lines 10`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.JSON = f.JSON
			if len(args) == 1 {
				opts.JobID = args[0]
			}
			if err := opts.validate(); err != nil {
				return err
			}
			return opts.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&opts.LogPath, "log", "", "read this log file instead of asking Slurm")
	cmd.Flags().BoolVar(&opts.Stderr, "stderr", false, "read the job's StdErr file instead of its StdOut")
	cmd.Flags().IntVar(&opts.Lines, "lines", 0, "also print the last N training progress lines")
	cmd.Flags().BoolVar(&opts.NoLLM, "no-llm", false, "never ask the LLM, even when llm.enabled is set")
	return cmd
}

func (o *Options) validate() error {
	switch {
	case o.JobID == "" && o.LogPath == "":
		return exitcode.Errorf(exitcode.Usage, "give a job id or --log FILE")
	case o.JobID != "" && o.LogPath != "":
		return exitcode.Errorf(exitcode.Usage, "give a job id or --log FILE, not both")
	case o.Lines < 0:
		return exitcode.Errorf(exitcode.Usage, "--lines must not be negative")
	}
	return nil
}

// result is the --json object: the report with where it came from.
type result struct {
	JobID string `json:"job_id,omitempty"`
	Log   string `json:"log"`
	*logmetrics.Report
	// LLMNote is set when the LLM was asked for the step time.
	LLMNote string `json:"llm_note,omitempty"`
}

// Run resolves the log, extracts the progress and prints it.
func (o *Options) Run(ctx context.Context) error {
	path := o.LogPath
	if path == "" {
		var err error
		if path, err = o.jobLog(ctx); err != nil {
			return err
		}
	}
	cfg, err := o.Config()
	if err != nil {
		return err
	}
	rep, err := logmetrics.ExtractFile(path, ExtractOptions(cfg, o.Now()))
	if err != nil {
		return logError(err)
	}
	res := result{JobID: o.JobID, Log: path, Report: rep, LLMNote: o.refineStepTime(ctx, cfg, rep)}
	if o.JSON {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
		return nil
	}
	return writeReport(o.IO.Out, res, o.Lines, o.Now())
}

// refineStepTime asks the LLM for a step time no rule found, when
// llm.enabled is set and --no-llm is not, and returns its note.
func (o *Options) refineStepTime(ctx context.Context, cfg *config.Config, rep *logmetrics.Report) string {
	if o.NoLLM || o.LLM == nil || !cfg.LLM.Enabled || !llmassist.UnknownStepTime(rep) {
		return ""
	}
	client, err := o.LLM()
	return llmassist.RefineStepTime(ctx, client, err, rep).Note
}

// ExtractOptions maps the metrics configuration onto extraction options.
func ExtractOptions(cfg *config.Config, now time.Time) logmetrics.Options {
	return logmetrics.Options{
		ProgressLines: cfg.Metrics.ProgressLines,
		SlowdownRatio: cfg.Metrics.SlowdownRatio,
		StallSteps:    cfg.Metrics.StallSteps,
		Now:           now,
	}
}

// jobLog asks Slurm where the job writes its output.
func (o *Options) jobLog(ctx context.Context) (string, error) {
	client, err := o.Slurm()
	if err != nil {
		return "", err
	}
	job, err := client.Job(ctx, o.JobID)
	if err != nil {
		return "", fmt.Errorf("look up job %s: %w", o.JobID, err)
	}
	path := job.StdOut
	if o.Stderr {
		path = job.StdErr
	}
	if path == "" {
		return "", exitcode.Errorf(exitcode.NotFound, "job %s: Slurm reports no output file; use --log FILE", o.JobID)
	}
	return path, nil
}

// logError gives each way a log can be unreadable its exit code.
func logError(err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return exitcode.New(exitcode.NotFound, fmt.Errorf("%w (the log was deleted or rotated, or the job has not started)", err))
	case errors.Is(err, logmetrics.ErrNotRegular), errors.Is(err, logmetrics.ErrBinary), errors.Is(err, logmetrics.ErrChanged):
		return exitcode.New(exitcode.DataErr, err)
	case errors.Is(err, os.ErrPermission):
		return exitcode.New(exitcode.NotFound, err)
	}
	return err
}

// writeReport prints the report as aligned "field: value" lines.
func writeReport(w io.Writer, res result, lines int, now time.Time) error {
	rep := res.Report
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	if res.JobID != "" {
		row("Job", res.JobID)
	}
	row("Log", res.Log)
	if rep.StepTimeS == nil && rep.Step == nil {
		row("Progress", "unknown (no training progress line found)")
	} else {
		row("Step", FormatStep(rep.Step, rep.TotalSteps))
		row("Step time", FormatStepTime(rep.StepTimeS)+sourceNote(rep.Source))
		if rep.Throughput != nil {
			row("Throughput", FormatThroughput(*rep.Throughput, rep.ThroughputUnit))
		}
		if rep.Loss != nil {
			row("Loss", fmt.Sprintf("%.4g", *rep.Loss))
		}
		if rep.ETAS != nil {
			row("ETA", FormatSeconds(*rep.ETAS))
		}
		row("Trend", trend(rep, now))
		row("Last progress", rep.LastProgressLine)
	}
	if res.LLMNote != "" {
		row("LLM note", res.LLMNote)
	}
	if rep.ErrorLine != "" {
		row("Error after it", rep.ErrorLine)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if lines > 0 && len(rep.ProgressLines) > 0 {
		from := max(0, len(rep.ProgressLines)-lines)
		fmt.Fprintf(w, "\nLast %d progress lines:\n", len(rep.ProgressLines)-from)
		for _, l := range rep.ProgressLines[from:] {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	return nil
}

func sourceNote(source string) string {
	if source == "" {
		return ""
	}
	return " (" + source + ")"
}

// trend describes slowdown and stall in words.
func trend(rep *logmetrics.Report, now time.Time) string {
	var parts []string
	switch {
	case rep.Slowdown:
		parts = append(parts, fmt.Sprintf("SLOWDOWN (speed %.0f%% of earlier)", 100**rep.SpeedRatio))
	case rep.SpeedRatio != nil:
		parts = append(parts, fmt.Sprintf("steady (speed %.0f%% of earlier)", 100**rep.SpeedRatio))
	default:
		parts = append(parts, "too few lines to tell")
	}
	if rep.Stalled {
		parts = append(parts, "STALLED (no output for "+FormatSeconds(now.Sub(rep.ModTime).Seconds())+")")
	}
	return strings.Join(parts, ", ")
}

// FormatStep renders "step/total (pct)" with "?" for unknown parts.
func FormatStep(step, total *int64) string {
	s := "?"
	if step != nil {
		s = fmt.Sprint(*step)
	}
	if total != nil {
		s += "/" + fmt.Sprint(*total)
		if step != nil && *total > 0 {
			s += fmt.Sprintf(" (%.1f%%)", 100*float64(*step)/float64(*total))
		}
	}
	return s
}

// FormatStepTime renders seconds per step with a sensible unit.
func FormatStepTime(v *float64) string {
	switch {
	case v == nil:
		return "unknown"
	case *v < 1:
		return fmt.Sprintf("%.1f ms/step", *v*1000)
	default:
		return fmt.Sprintf("%.3g s/step", *v)
	}
}

// FormatThroughput renders a throughput with k/M suffixes.
func FormatThroughput(v float64, unit string) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM %s", v/1e6, unit)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk %s", v/1e3, unit)
	default:
		return fmt.Sprintf("%.4g %s", v, unit)
	}
}

// FormatSeconds renders a duration compactly: 45s, 12m03s, 5h07m, 3d04h.
func FormatSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}
