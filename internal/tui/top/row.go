// Package top is the live view of running jobs and their training progress:
// a bubbletea model fed with snapshots, and the plain table and JSON used
// when no terminal is attached.
package top

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/schedmate/schedmate/internal/metrics"
)

// Row is one running job with what its log says.
type Row struct {
	JobID   string        `json:"job_id"`
	Name    string        `json:"name"`
	User    string        `json:"user"`
	Nodes   string        `json:"nodes"`
	GPUs    int           `json:"gpus"`
	Elapsed time.Duration `json:"-"`
	// ElapsedS is Elapsed in seconds, for JSON.
	ElapsedS float64 `json:"elapsed_s"`
	Log      string  `json:"log,omitempty"`
	// Progress is what the log says; nil when it could not be read.
	Progress *metrics.Report `json:"progress"`
	// LogError says why the log could not be read.
	LogError string `json:"log_error,omitempty"`
}

// Snapshot is the state of the cluster at one refresh.
type Snapshot struct {
	Time time.Time
	Rows []Row
	// Err is set when the job list itself could not be read.
	Err error
}

// Flags are the short warnings shown for a row: SLOW (slowdown), STALL
// (no output for many step times), ERR (an error line after the last
// progress line) and LOG (the log cannot be read).
func (r Row) Flags() []string {
	var f []string
	if r.LogError != "" {
		f = append(f, "LOG")
	}
	if p := r.Progress; p != nil {
		if p.Slowdown {
			f = append(f, "SLOW")
		}
		if p.Stalled {
			f = append(f, "STALL")
		}
		if p.ErrorLine != "" {
			f = append(f, "ERR")
		}
	}
	return f
}

// fraction is step/total in [0, 1], or -1 when unknown.
func (r Row) fraction() float64 {
	p := r.Progress
	if p == nil || p.Step == nil || p.TotalSteps == nil || *p.TotalSteps <= 0 {
		return -1
	}
	return math.Min(1, math.Max(0, float64(*p.Step)/float64(*p.TotalSteps)))
}

func (r Row) stepTime() float64 {
	if r.Progress == nil || r.Progress.StepTimeS == nil {
		return math.Inf(1)
	}
	return *r.Progress.StepTimeS
}

func (r Row) eta() float64 {
	if r.Progress == nil || r.Progress.ETAS == nil {
		return math.Inf(1)
	}
	return *r.Progress.ETAS
}

// column is one table column: its header, width, the minimum screen width
// at which it is shown, and how a row fills it.
type column struct {
	title    string
	width    int
	minWidth int
	right    bool
	cell     func(Row) string
}

var columns = []column{
	{"JOBID", 8, 0, false, func(r Row) string { return r.JobID }},
	{"NAME", 14, 0, false, func(r Row) string { return r.Name }},
	{"USER", 8, 90, false, func(r Row) string { return r.User }},
	{"NODES", 10, 130, false, func(r Row) string { return r.Nodes }},
	{"GPU", 3, 100, true, func(r Row) string { return fmt.Sprint(r.GPUs) }},
	{"ELAPSED", 7, 0, true, func(r Row) string { return formatDuration(r.Elapsed) }},
	{"PROGRESS", 16, 0, false, progressCell},
	{"STEP", 6, 0, true, func(r Row) string {
		if r.Progress == nil {
			return "-"
		}
		return formatStepTime(r.Progress.StepTimeS)
	}},
	{"TREND", 6, 0, false, func(r Row) string {
		if r.Progress == nil {
			return ""
		}
		return Sparkline(r.Progress.RecentStepTimes, 6)
	}},
	{"TPUT", 9, 110, true, func(r Row) string {
		if r.Progress == nil || r.Progress.Throughput == nil {
			return "-"
		}
		return formatThroughput(*r.Progress.Throughput, r.Progress.ThroughputUnit)
	}},
	{"ETA", 6, 0, true, func(r Row) string {
		if r.Progress == nil || r.Progress.ETAS == nil {
			return "-"
		}
		return formatDuration(time.Duration(*r.Progress.ETAS * float64(time.Second)))
	}},
	{"FLAGS", 14, 0, false, func(r Row) string { return strings.Join(r.Flags(), ",") }},
}

// visibleColumns returns the columns shown at a screen width.
func visibleColumns(width int) []column {
	var out []column
	for _, c := range columns {
		if width >= c.minWidth {
			out = append(out, c)
		}
	}
	return out
}

// progressCell is "step/total" with a bar, or the step alone.
func progressCell(r Row) string {
	p := r.Progress
	if p == nil || p.Step == nil {
		return "-"
	}
	frac := r.fraction()
	if frac < 0 {
		return fmt.Sprintf("step %s", compactInt(*p.Step))
	}
	return Bar(frac, 6) + " " + fmt.Sprintf("%3.0f%%", 100*frac) + " " + compactInt(*p.Step)
}

// Bar draws a progress bar of width cells.
func Bar(frac float64, width int) string {
	full := int(math.Round(frac * float64(width)))
	return strings.Repeat("█", full) + strings.Repeat("░", width-full)
}

var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// sparkFloor is the smallest spread, relative to the largest value, that
// a sparkline scales to its full height, so that jitter stays flat.
const sparkFloor = 0.2

// Sparkline draws the last width values; a taller bar is a slower step.
// Differences of less than a fifth of the largest value stay low.
func Sparkline(values []float64, width int) string {
	if len(values) > width {
		values = values[len(values)-width:]
	}
	if len(values) < 2 {
		return ""
	}
	lo, hi := values[0], values[0]
	for _, v := range values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	var b strings.Builder
	for _, v := range values {
		i := 0
		if span := math.Max(hi-lo, sparkFloor*hi); span > 0 {
			i = int((v - lo) / span * float64(len(sparkRunes)-1))
		}
		b.WriteRune(sparkRunes[i])
	}
	return b.String()
}

func compactInt(v int64) string {
	switch {
	case v >= 10_000_000:
		return fmt.Sprintf("%dM", v/1_000_000)
	case v >= 100_000:
		return fmt.Sprintf("%dk", v/1000)
	default:
		return fmt.Sprint(v)
	}
}

func formatStepTime(v *float64) string {
	switch {
	case v == nil:
		return "?"
	case *v < 1:
		return fmt.Sprintf("%.0fms", *v*1000)
	case *v < 100:
		return fmt.Sprintf("%.2fs", *v)
	default:
		return fmt.Sprintf("%.0fs", *v)
	}
}

func formatThroughput(v float64, unit string) string {
	unit = strings.TrimSuffix(unit, "/s")
	short := map[string]string{"tokens": "tok", "samples": "smp", "images": "img", "words": "wrd"}[unit]
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM%s", v/1e6, short)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk%s", v/1e3, short)
	default:
		return fmt.Sprintf("%.0f%s", v, short)
	}
}

// formatDuration renders a duration in at most 7 characters.
func formatDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d <= 0:
		return "0s"
	case d < time.Hour:
		return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
	case d < 100*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}
