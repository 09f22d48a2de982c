package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/slurm"
)

// fakeSlurm answers Job from a map; other methods are not used here.
type fakeSlurm struct {
	slurm.Client
	jobs map[string]*slurm.Job
}

func (f fakeSlurm) Job(_ context.Context, id string) (*slurm.Job, error) {
	if j, ok := f.jobs[id]; ok {
		return j, nil
	}
	return nil, errors.New("invalid job id specified")
}

const trainingLog = "iter 10/100: loss 2.3000, time 45.20ms\niter 20/100: loss 2.1000, time 45.00ms\n"

func newOptions(t *testing.T, jobs map[string]*slurm.Job) (*Options, *bytes.Buffer) {
	t.Helper()
	io, _, out, _ := iostreams.Test()
	opts := &Options{
		IO:     io,
		Slurm:  func() (slurm.Client, error) { return fakeSlurm{jobs: jobs}, nil },
		Config: func() (*config.Config, error) { return config.Default(), nil },
		Now:    func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) },
	}
	return opts, out
}

func writeLog(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "slurm-42.out")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"nothing", Options{}, false},
		{"job", Options{JobID: "42"}, true},
		{"log", Options{LogPath: "x.out"}, true},
		{"both", Options{JobID: "42", LogPath: "x.out"}, false},
		{"negative lines", Options{JobID: "42", Lines: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.validate()
			if (err == nil) != tt.ok {
				t.Fatalf("validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && exitcode.Of(err) != exitcode.Usage {
				t.Errorf("exit code %d, want usage", exitcode.Of(err))
			}
		})
	}
}

func TestRunJSON(t *testing.T) {
	path := writeLog(t, trainingLog)
	opts, out := newOptions(t, map[string]*slurm.Job{"42": {ID: "42", StdOut: path}})
	opts.JobID, opts.JSON = "42", true
	if err := opts.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(out)
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if dec.More() {
		t.Error("more than one JSON value printed")
	}
	for _, k := range []string{"step_time_s", "step", "total_steps", "throughput", "throughput_unit", "eta_s", "loss", "last_progress_line", "slowdown", "stalled"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("json lacks %q", k)
		}
	}
	if obj["step_time_s"] != 0.045 || obj["step"] != 20.0 || obj["log"] != path {
		t.Errorf("json = %v", obj)
	}
}

func TestRunUnknownIsNull(t *testing.T) {
	opts, out := newOptions(t, nil)
	opts.LogPath, opts.JSON = writeLog(t, "loading data\nTraceback (most recent call last):\n"), true
	if err := opts.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"step_time_s": null`) {
		t.Errorf("unknown step time not null:\n%s", out)
	}
}

func TestRunText(t *testing.T) {
	opts, out := newOptions(t, nil)
	opts.LogPath, opts.Lines = writeLog(t, trainingLog), 5
	if err := opts.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Step:", "20/100 (20.0%)", "45.0 ms/step (explicit)", "ETA:", "Last 2 progress lines:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "core.bin")
	if err := os.WriteFile(binary, make([]byte, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		job   string
		log   string
		code  exitcode.Code
		words string
	}{
		{"deleted log", "", filepath.Join(dir, "gone.out"), exitcode.NotFound, "deleted or rotated"},
		{"directory", "", dir, exitcode.DataErr, "not a regular file"},
		{"binary", "", binary, exitcode.DataErr, "binary"},
		{"job without output file", "7", "", exitcode.NotFound, "no output file"},
		{"unknown job", "8", "", exitcode.Error, "invalid job id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, _ := newOptions(t, map[string]*slurm.Job{"7": {ID: "7"}})
			opts.JobID, opts.LogPath = tt.job, tt.log
			err := opts.Run(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			if exitcode.Of(err) != tt.code || !strings.Contains(err.Error(), tt.words) {
				t.Errorf("err = %v (code %d), want code %d mentioning %q", err, exitcode.Of(err), tt.code, tt.words)
			}
		})
	}
}

func TestFormatSeconds(t *testing.T) {
	tests := map[float64]string{45: "45s", 723: "12m03s", 18420: "5h07m", 3*86400 + 4*3600: "3d04h"}
	for in, want := range tests {
		if got := FormatSeconds(in); got != want {
			t.Errorf("FormatSeconds(%v) = %q, want %q", in, got, want)
		}
	}
}
