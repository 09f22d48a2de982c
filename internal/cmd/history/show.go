package history

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/store"
)

func newShowCmd(f *factory.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "show <jobid>",
		Short: "Show everything recorded about one job",
		Args:  cobra.ExactArgs(1),
		Example: `  schedmate history show 4242
  schedmate history show 4290_7 --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openForReading(f)
			if err != nil {
				return err
			}
			if st == nil {
				return exitcode.Errorf(exitcode.NotFound, "job %s: no history recorded yet", args[0])
			}
			job, err := st.GetJob(args[0])
			if errors.Is(err, store.ErrNotFound) {
				return exitcode.Errorf(exitcode.NotFound, "job %s is not in the history", args[0])
			}
			if err != nil {
				return factory.StoreError(err)
			}
			if f.JSON {
				return writeJSON(f.IO.Out, job)
			}
			return writeJob(f.IO.Out, job)
		},
	}
}

// writeJob prints a job as aligned "field: value" lines, leaving out what
// is unknown.
func writeJob(w io.Writer, j *store.Job) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row := func(k, v string) {
		if v != "" && v != "-" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("Job", j.JobID)
	if j.ArrayJobID != "" {
		row("Array", j.ArrayJobID+" task "+j.ArrayTaskID)
	}
	row("Name", j.Name)
	row("User", j.User)
	row("Account", j.Account)
	row("Partition", j.Partition)
	row("State", j.State)
	row("Exit", fmt.Sprintf("%d:%d", j.ExitCode, j.Signal))
	row("Submitted", formatTime(j.Submit))
	row("Started", formatTime(j.Start))
	row("Ended", formatTime(j.End))
	row("Elapsed", formatDuration(j.Duration()))
	row("Time limit", formatDuration(j.TimeLimit))
	row("Nodes", j.NodeList)
	if j.NumGPUs > 0 {
		row("GPUs", fmt.Sprint(j.NumGPUs))
	}
	row("Work dir", j.WorkDir)
	row("Script", j.Script)
	row("Command", j.Command)
	row("Submit line", j.SubmitLine)
	row("Stdout", j.StdOut)
	if j.StdErr != j.StdOut {
		row("Stderr", j.StdErr)
	}
	if j.RequeueCount > 0 {
		row("Requeues", fmt.Sprint(j.RequeueCount))
	}
	row("Fingerprint", j.FingerprintHash)
	if e := j.Estimate; e != nil {
		row("Estimate", fmt.Sprintf("%s (%s, confidence %.2f)", formatDuration(secondsToDuration(e.EstimateS)), e.Source, e.Confidence))
	}
	if m := j.Metrics; m != nil {
		parts := []string{}
		if m.StepTimeS > 0 {
			parts = append(parts, fmt.Sprintf("%.3gs/step", m.StepTimeS))
		}
		if m.Throughput > 0 {
			parts = append(parts, fmt.Sprintf("%.4g %s", m.Throughput, m.ThroughputUnit))
		}
		if m.TotalSteps > 0 {
			parts = append(parts, fmt.Sprintf("step %d/%d", m.Step, m.TotalSteps))
		} else if m.Step > 0 {
			parts = append(parts, fmt.Sprintf("step %d", m.Step))
		}
		if m.Loss != nil {
			parts = append(parts, fmt.Sprintf("loss %.4g", *m.Loss))
		}
		row("Progress", strings.Join(parts, ", "))
	}
	if g := j.GPU; g != nil {
		row("GPU use", fmt.Sprintf("SM %.0f%%, peak memory %.1f GiB, Xids %v", g.MeanSMUtil, float64(g.PeakMemBytes)/(1<<30), g.Xids))
	}
	if d := j.Diagnosis; d != nil {
		cause := d.Category
		if d.Component != "" {
			cause += "/" + d.Component
		}
		row("Diagnosis", fmt.Sprintf("%s (confidence %.2f)", cause, d.Confidence))
		if d.Line > 0 {
			row("Log line", fmt.Sprintf("%d: %s", d.Line, d.Text))
		}
		row("Action", d.Action)
	}
	for _, k := range slices.Sorted(maps.Keys(j.Metadata)) {
		row("  "+k, j.Metadata[k])
	}
	row("Recorded by", j.Source)
	return tw.Flush()
}

// secondsToDuration converts an estimate in seconds, clamping nonsense.
func secondsToDuration(s float64) time.Duration {
	if !(s > 0) || s > 1e9 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}
