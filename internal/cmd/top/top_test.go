package top

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/iostreams"
	logmetrics "github.com/schedmate/schedmate/internal/metrics"
	"github.com/schedmate/schedmate/slurm"
)

// fakeQueue answers Queue with fixed jobs and records the filter it got.
type fakeQueue struct {
	slurm.Client
	jobs []slurm.Job
	err  error
	got  *slurm.QueueFilter
}

func (f fakeQueue) Queue(_ context.Context, filter slurm.QueueFilter) ([]slurm.Job, error) {
	*f.got = filter
	return f.jobs, f.err
}

func testJobs(t *testing.T) []slurm.Job {
	t.Helper()
	dir := t.TempDir()
	good := filepath.Join(dir, "slurm-10.out")
	if err := os.WriteFile(good, []byte("step 50/200 | loss 1.5 | step_time 0.500s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	return []slurm.Job{
		{ID: "10", Name: "train", User: "alice", NodeList: "gpu01", GPUs: 8, Start: start, StdOut: good},
		{ID: "9", Name: "lost", User: "alice", NodeList: "gpu02", GPUs: 1, Start: start, StdOut: filepath.Join(dir, "gone.out")},
	}
}

func newOptions(q fakeQueue) (*Options, *bytes.Buffer) {
	io, _, out, _ := iostreams.Test()
	return &Options{
		IO:        io,
		Slurm:     func() (slurm.Client, error) { return q, nil },
		Config:    func() (*config.Config, error) { return config.Default(), nil },
		LogToFile: func(string) {},
		Logger:    func() *slog.Logger { return slog.New(slog.DiscardHandler) },
		Now:       func() time.Time { return time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC) },
	}, out
}

func TestOnceJSON(t *testing.T) {
	var got slurm.QueueFilter
	opts, out := newOptions(fakeQueue{jobs: testJobs(t), got: &got})
	opts.JSON, opts.User = true, "alice"
	if err := opts.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got.User != "alice" || got.All || len(got.States) != 1 || got.States[0] != "RUNNING" {
		t.Errorf("queue filter = %+v", got)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	if len(rows) != 2 || rows[0]["job_id"] != "9" || rows[1]["job_id"] != "10" {
		t.Fatalf("rows = %v", rows)
	}
	if rows[0]["log_error"] == nil || rows[0]["progress"] != nil {
		t.Errorf("missing log not reported: %v", rows[0])
	}
	p := rows[1]["progress"].(map[string]any)
	if p["step_time_s"] != 0.5 || p["eta_s"] != 75.0 || rows[1]["elapsed_s"] != 3600.0 {
		t.Errorf("progress = %v elapsed %v", p, rows[1]["elapsed_s"])
	}
}

func TestOnceTableWhenNotATerminal(t *testing.T) {
	var got slurm.QueueFilter
	opts, out := newOptions(fakeQueue{jobs: testJobs(t), got: &got})
	opts.All = true
	if err := opts.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !got.All {
		t.Error("--all not passed to Slurm")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "JOBID") || !strings.Contains(lines[1], "LOG") || !strings.Contains(lines[2], "500ms") {
		t.Errorf("table:\n%s", out)
	}
}

func TestOnceSlurmDown(t *testing.T) {
	var got slurm.QueueFilter
	opts, _ := newOptions(fakeQueue{err: errors.New("slurm_load_jobs error: Unable to contact slurm controller"), got: &got})
	opts.Once, opts.All = true, true
	err := opts.Run(context.Background())
	if exitcode.Of(err) != exitcode.Unavailable || !strings.Contains(err.Error(), "contact slurm controller") {
		t.Errorf("err = %v (code %d)", err, exitcode.Of(err))
	}
}

// pathlessQueue lists jobs without their output path, as squeue does, and
// answers Job with it, counting the calls.
type pathlessQueue struct {
	slurm.Client
	jobs  []slurm.Job
	paths map[string]string
	asked map[string]int
}

func (p *pathlessQueue) Queue(context.Context, slurm.QueueFilter) ([]slurm.Job, error) {
	out := make([]slurm.Job, len(p.jobs))
	for i, j := range p.jobs {
		j.StdOut = ""
		out[i] = j
	}
	return out, nil
}

func (p *pathlessQueue) Job(_ context.Context, id string) (*slurm.Job, error) {
	p.asked[id]++
	if path, ok := p.paths[id]; ok {
		return &slurm.Job{ID: id, StdOut: path}, nil
	}
	return nil, slurm.ErrNotFound
}

func TestCollectorAsksForEachOutputPathOnce(t *testing.T) {
	jobs := testJobs(t)
	q := &pathlessQueue{jobs: jobs, paths: map[string]string{"10": jobs[0].StdOut}, asked: map[string]int{}}
	c := NewCollector(q)
	for range 3 {
		snap := c.Collect(context.Background(), slurm.QueueFilter{}, logmetrics.Options{})
		if snap.Err != nil || len(snap.Rows) != 2 {
			t.Fatalf("snapshot: %d rows, %v", len(snap.Rows), snap.Err)
		}
		if snap.Rows[0].Progress == nil || snap.Rows[1].LogError == "" {
			t.Fatalf("rows: %+v", snap.Rows)
		}
	}
	// A known path is remembered; an unknown one is asked again each time.
	if q.asked["10"] != 1 || q.asked["9"] != 3 {
		t.Errorf("scontrol calls per job = %v, want 10:1 9:3", q.asked)
	}
	q.jobs = q.jobs[1:] // job 10 ended
	c.Collect(context.Background(), slurm.QueueFilter{}, logmetrics.Options{})
	if _, ok := c.paths["10"]; ok {
		t.Error("an ended job's path is still remembered")
	}
}
