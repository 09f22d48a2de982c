package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/golden"
)

// progressJob is a job that prints training progress in one real format
// at a known pace (testdata/progress/emit.py).
type progressJob struct {
	format string
	stepS  float64 // the true step time
	steps  int
	id     string
	log    string
}

// progressRow is the part of a `schedmate top --json` row these tests read.
type progressRow struct {
	JobID    string `json:"job_id"`
	Name     string `json:"name"`
	LogError string `json:"log_error"`
	Progress *struct {
		StepTimeS       *float64  `json:"step_time_s"`
		Source          string    `json:"source"`
		RecentStepTimes []float64 `json:"recent_step_times"`
		Step            *int64    `json:"step"`
		TotalSteps      *int64    `json:"total_steps"`
	} `json:"progress"`
}

// python returns the interpreter the progress jobs run with.
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("python3 is needed to print real progress formats")
	return ""
}

// submitProgress starts the jobs, named prefix-format, with their logs in
// dir, cancels them when the test ends and waits until they run.
func (c *cluster) submitProgress(prefix, dir string, jobs []*progressJob) {
	c.t.Helper()
	py := python(c.t)
	emit, err := filepath.Abs(filepath.Join("testdata", "progress", "emit.py"))
	if err != nil {
		c.t.Fatal(err)
	}
	var ids []string
	c.t.Cleanup(func() {
		if len(ids) > 0 {
			c.exec("", nil, "scancel", ids...)
		}
	})
	for _, j := range jobs {
		name := prefix + "-" + j.format
		j.log = filepath.Join(dir, name+".out")
		wrap := fmt.Sprintf("exec %s %s %s %g %d", py, emit, j.format, j.stepS, j.steps)
		j.id = c.sbatch("-J", name, "-o", j.log, "-t", "5", "--wrap", wrap)
		ids = append(ids, j.id)
	}
	for _, j := range jobs {
		c.waitRunning(time.Minute, j.id)
	}
}

// topRows runs `schedmate top --once --json --all` and indexes the rows by job id.
func (c *cluster) topRows() map[string]progressRow {
	c.t.Helper()
	var rows []progressRow
	c.schedmateJSON(&rows, "top", "--once", "--all")
	byID := make(map[string]progressRow, len(rows))
	for _, r := range rows {
		byID[r.JobID] = r
	}
	return byID
}

// within reports whether got is within 10% of want.
func within(got *float64, want float64) error {
	if got == nil {
		return fmt.Errorf("step time unknown, want %gs", want)
	}
	if math.Abs(*got-want) > want/10 {
		return fmt.Errorf("step time %.4gs, want %gs ±10%%", *got, want)
	}
	return nil
}

// TestMetricsLiveProgress runs jobs that print Hugging Face, Lightning,
// Megatron, nanoGPT and timestamped progress at known paces, and checks
// that `top` and `metrics` read each step time within 10% while they run,
// including a Hugging Face run paused in a slower evaluation whose bar is
// still being drawn.
func TestMetricsLiveProgress(t *testing.T) {
	c := newCluster(t)
	jobs := []*progressJob{
		{format: "hf", stepS: 0.2, steps: 600},
		{format: "lightning", stepS: 0.25, steps: 500},
		{format: "megatron", stepS: 0.3, steps: 400},
		{format: "nanogpt", stepS: 0.15, steps: 800},
		{format: "timestamps", stepS: 0.35, steps: 400},
		{format: "hf-eval", stepS: 0.2, steps: 40},
	}
	c.submitProgress("TestMetricsLiveProgress", t.TempDir(), jobs)

	c.eventually(90*time.Second, func() error {
		rows := c.topRows()
		var problems []string
		for _, j := range jobs {
			r, ok := rows[j.id]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s (job %s): not listed", j.format, j.id))
			case r.Progress == nil:
				problems = append(problems, fmt.Sprintf("%s: no progress (log error %q)", j.format, r.LogError))
			case j.format == "hf-eval" && evaluationBars(j.log) < 2:
				problems = append(problems, "hf-eval: the evaluation has not started")
			case j.format == "hf-eval" && (r.Progress.Step == nil || *r.Progress.Step != int64(j.steps)):
				problems = append(problems, fmt.Sprintf("hf-eval: step %v, want the training step %d while the evaluation runs", r.Progress.Step, j.steps))
			default:
				if err := within(r.Progress.StepTimeS, j.stepS); err != nil {
					problems = append(problems, j.format+": "+err.Error())
				}
			}
		}
		if len(problems) > 0 {
			return fmt.Errorf("top: %s", strings.Join(problems, "; "))
		}
		return nil
	})

	for _, j := range jobs {
		var rep struct {
			JobID     string   `json:"job_id"`
			Log       string   `json:"log"`
			StepTimeS *float64 `json:"step_time_s"`
			Source    string   `json:"source"`
		}
		c.schedmateJSON(&rep, "metrics", j.id)
		if rep.Log != j.log {
			t.Errorf("%s: metrics read %s, want %s", j.format, rep.Log, j.log)
		}
		if err := within(rep.StepTimeS, j.stepS); err != nil {
			t.Errorf("%s: metrics: %v", j.format, err)
			continue
		}
		t.Logf("%-10s true %.3fs  read %.4fs (%s, %+.1f%%)", j.format, j.stepS, *rep.StepTimeS, rep.Source, 100*(*rep.StepTimeS-j.stepS)/j.stepS)
	}
}

// TestMetricsReachHistory checks that a finished job's last step time is
// recorded in its history entry by the epilog.
func TestMetricsReachHistory(t *testing.T) {
	c := newCluster(t)
	job := &progressJob{format: "nanogpt", stepS: 0.2, steps: 25}
	c.submitProgress("TestMetricsReachHistory", t.TempDir(), []*progressJob{job})
	c.waitGone(time.Minute, job.id)
	c.eventually(30*time.Second, func() error {
		r := c.schedmate("--json", "history", "show", job.id)
		if r.code != 0 {
			return fmt.Errorf("history show %s: exit %d: %s", job.id, r.code, r.stderr)
		}
		var entry struct {
			Metrics *struct {
				StepTimeS float64 `json:"step_time_s"`
				Step      int64   `json:"step"`
			} `json:"metrics"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &entry); err != nil {
			return fmt.Errorf("history show %s: %v", job.id, err)
		}
		if entry.Metrics == nil {
			return fmt.Errorf("history entry of job %s has no metrics", job.id)
		}
		if entry.Metrics.Step != int64(job.steps) {
			return fmt.Errorf("history step %d, want %d", entry.Metrics.Step, job.steps)
		}
		return within(&entry.Metrics.StepTimeS, job.stepS)
	})
}

// TestMetricsBadLogs runs jobs whose logs go bad: deleted while written,
// truncated in place by a copy-and-truncate rotation, sent nowhere
// (/dev/null), and one 50 MB line without a newline. top must keep listing
// every job with a clear reason and bounded memory; metrics must fail with
// the documented exit codes.
func TestMetricsBadLogs(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	deleted := &progressJob{format: "nanogpt", stepS: 0.2, steps: 600}
	rotated := &progressJob{format: "megatron", stepS: 0.2, steps: 600}
	long := &progressJob{format: "longline", stepS: 0.2, steps: 600}
	c.submitProgress("TestMetricsBadLogs-deleted", dir, []*progressJob{deleted})
	c.submitProgress("TestMetricsBadLogs-rotated", dir, []*progressJob{rotated})
	c.submitProgress("TestMetricsBadLogs-long", dir, []*progressJob{long})
	nowhere := c.sbatch("-J", "TestMetricsBadLogs-nowhere", "-o", "/dev/null", "-t", "5", "--wrap", "sleep 300")
	t.Cleanup(func() { c.exec("", nil, "scancel", nowhere) })
	c.waitRunning(time.Minute, nowhere)

	c.eventually(30*time.Second, func() error {
		rows := c.topRows()
		for _, j := range []*progressJob{deleted, rotated, long} {
			if r := rows[j.id]; r.Progress == nil || within(r.Progress.StepTimeS, j.stepS) != nil {
				return fmt.Errorf("%s: no step time yet (%+v)", j.format, r)
			}
		}
		return nil
	})
	if err := os.Remove(deleted.log); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(rotated.log, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the rotated job writes on past the hole

	out, rss := c.runMeasured("--json", "top", "--once", "--all")
	var list []progressRow
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("top --json: %v\n%s", err, out)
	}
	rows := make(map[string]progressRow)
	for _, r := range list {
		rows[r.JobID] = r
	}
	if r := rows[deleted.id]; r.Progress != nil || !strings.Contains(r.LogError, "no such file") {
		t.Errorf("deleted log: row %+v, want a log error saying the file is gone", r)
	}
	if r := rows[nowhere]; r.Progress != nil || r.LogError == "" {
		t.Errorf("log sent to /dev/null: row %+v, want a log error", r)
	} else {
		t.Logf("log sent to /dev/null: %s", r.LogError)
	}
	if r := rows[rotated.id]; r.Progress != nil {
		if err := within(r.Progress.StepTimeS, rotated.stepS); err != nil {
			t.Errorf("truncated log: %v", err)
		}
	} else if r.LogError == "" {
		t.Errorf("truncated log: row %+v, want progress or a log error", r)
	}
	if r := rows[long.id]; r.Progress == nil || within(r.Progress.StepTimeS, long.stepS) != nil {
		t.Errorf("log with a 50 MB line: row %+v, want the step time after it", r)
	}
	const maxRSS = 100 << 20
	t.Logf("top --once over a 50 MB line: peak RSS %d MiB", rss>>20)
	if rss > maxRSS {
		t.Errorf("top --once used %d MiB with a 50 MB log line, want under %d MiB", rss>>20, maxRSS>>20)
	}

	r := c.schedmate("metrics", deleted.id)
	if r.code != 3 || !strings.Contains(r.stderr, "deleted or rotated") {
		t.Errorf("metrics on a deleted log: exit %d, stderr %q; want 3 and a hint", r.code, r.stderr)
	}
	if r := c.schedmate("metrics", nowhere); r.code == 0 || r.stderr == "" {
		t.Errorf("metrics on a job logging to /dev/null: exit %d, stderr %q", r.code, r.stderr)
	}
}

// evaluationBars counts the bars drawn below the training bar in a log.
func evaluationBars(log string) int {
	data, _ := os.ReadFile(log)
	return bytes.Count(data, []byte("\x1b[A"))
}

// runMeasured runs the binary and returns its stdout and peak resident memory.
func (c *cluster) runMeasured(args ...string) ([]byte, int64) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("schedmate %v: %v: %s", args, err, errb.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		c.t.Fatal("no resource usage for the finished process")
	}
	return out.Bytes(), ru.Maxrss << 10
}

// TestTopTmux drives the live `schedmate top --all` in an 80x24 tmux pane
// as a person would: filter to the test's jobs, sort by step time, open the
// details of the selected job, then delete one job's log while the view runs,
// and quit. Each screen, with what changes from run to run masked, is
// compared with testdata/progress/*.screen (-update rewrites them).
func TestTopTmux(t *testing.T) {
	c := newCluster(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	dir := t.TempDir()
	jobs := []*progressJob{
		{format: "hf", stepS: 0.2, steps: 600},
		{format: "megatron", stepS: 0.3, steps: 400},
		{format: "nanogpt", stepS: 0.15, steps: 800},
	}
	gone := &progressJob{format: "timestamps", stepS: 0.25, steps: 500}
	c.submitProgress("toptmux", dir, append(jobs, gone))
	c.eventually(30*time.Second, func() error {
		rows := c.topRows()
		for _, j := range append(jobs, gone) {
			if r := rows[j.id]; r.Progress == nil || len(r.Progress.RecentStepTimes) < 2 {
				return fmt.Errorf("%s: no trend yet", j.format)
			}
		}
		return nil
	})

	session := fmt.Sprintf("schedmate-toptmux-%d", os.Getpid())
	tmux := func(args ...string) result {
		t.Helper()
		r := c.exec("", nil, "tmux", args...)
		if r.code != 0 && args[0] != "kill-session" && args[0] != "has-session" {
			t.Fatalf("tmux %v: exit %d: %s", args, r.code, r.stderr)
		}
		return r
	}
	command := fmt.Sprintf("SCHEDMATE_LOG_FILE=%s %s top --all --interval 1s", filepath.Join(dir, "top.log"), c.bin)
	tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "24", command)
	t.Cleanup(func() { tmux("kill-session", "-t", session) })

	screen := func(name string, want ...string) {
		t.Helper()
		var got string
		c.eventually(10*time.Second, func() error {
			raw := tmux("capture-pane", "-p", "-t", session).stdout
			if dump := os.Getenv("SCHEDMATE_SCREEN_DIR"); dump != "" {
				_ = os.WriteFile(filepath.Join(dump, name+".raw"), []byte(raw), 0o644)
			}
			got = maskScreen(raw, jobs, gone)
			for _, w := range want {
				if !strings.Contains(raw, w) {
					return fmt.Errorf("screen %s lacks %q:\n%s", name, w, raw)
				}
			}
			return nil
		})
		golden.Check(t, filepath.Join("testdata", "progress", name+".screen"), []byte(got))
	}
	// Keys go in only once the view is drawn: until then the terminal
	// is still being asked about its colours and input would be lost.
	c.eventually(20*time.Second, func() error {
		if s := tmux("capture-pane", "-p", "-t", session).stdout; !strings.Contains(s, "toptmux") {
			return fmt.Errorf("the view shows no job yet:\n%s", s)
		}
		return nil
	})
	tmux("send-keys", "-t", session, "/", "toptmux", "Enter")
	screen("top_list", "filter: toptmux ·", "4 jobs", "q quit")
	tmux("send-keys", "-t", session, "s", "s")
	screen("top_sorted", "sort: step time", "q quit")
	tmux("send-keys", "-t", session, "Enter")
	screen("top_detail", "── ", "step time", "q quit")
	tmux("send-keys", "-t", session, "Escape")
	if err := os.Remove(gone.log); err != nil {
		t.Fatal(err)
	}
	screen("top_log_gone", "LOG", "q quit")
	tmux("send-keys", "-t", session, "q")
	c.eventually(5*time.Second, func() error {
		if tmux("has-session", "-t", session).code == 0 {
			return fmt.Errorf("q did not quit")
		}
		return nil
	})
}

var (
	reDigits  = regexp.MustCompile(`[0-9]+`)
	reSpaces  = regexp.MustCompile(` {2,}`)
	reGlyphs  = regexp.MustCompile(`[▁▂▃▄▅▆▇█░]+`)
	reTqdmBar = regexp.MustCompile(`%\|[^|]*\|`)
	// The detail pane shows the loss once the job has printed one, which
	// depends on when the screen is read.
	reLoss = regexp.MustCompile(` · loss N(\.N)?`)
)

// maskScreen hides what changes from run to run: job ids, numbers, bar and
// sparkline glyphs, the loss, and the column padding that moves with them.
func maskScreen(screen string, jobs []*progressJob, more ...*progressJob) string {
	for _, j := range append(jobs, more...) {
		screen = strings.ReplaceAll(screen, j.log, "LOG_PATH")
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
		l = reTqdmBar.ReplaceAllString(l, "%|BAR|")
		l = reGlyphs.ReplaceAllString(reDigits.ReplaceAllString(l, "N"), "=")
		l = reLoss.ReplaceAllString(l, "")
		lines = append(lines, strings.TrimRight(reSpaces.ReplaceAllString(l, "  "), " "))
	}
	return strings.Join(lines, "\n") + "\n"
}
