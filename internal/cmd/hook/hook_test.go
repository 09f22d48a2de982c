package hook

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/history"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/internal/spool"
	"github.com/schedmate/schedmate/internal/store"
)

// harness runs hook commands against a temporary database.
type harness struct {
	t      *testing.T
	dbPath string
	env    []string
}

func newHarness(t *testing.T) *harness {
	dir := t.TempDir()
	return &harness{t: t, dbPath: filepath.Join(dir, "schedmate.db"), env: []string{
		"SCHEDMATE_STORE_PATH=" + filepath.Join(dir, "schedmate.db"),
		"XDG_CONFIG_HOME=" + dir,
	}}
}

// run executes `hook <args>` with extra environment and returns stdout and
// stderr; the hook's own error must always be nil.
func (h *harness) run(steps Steps, extraEnv []string, args ...string) (stdout, stderr string) {
	h.t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := factory.New(ios)
	f.Environ = append(append([]string{}, h.env...), extraEnv...)
	defer f.Close()
	cmd := NewCmdWithSteps(f, steps)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		h.t.Fatalf("hook %v returned %v; hooks must always succeed", args, err)
	}
	return out.String(), errOut.String()
}

func (h *harness) job(id string) *store.Job {
	h.t.Helper()
	st, err := store.Open(h.dbPath, store.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		h.t.Fatal(err)
	}
	defer st.Close()
	j, err := st.GetJob(id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

var submitArgs = []string{"submit", "--script-file", "/spool/job4242/script", "--user", "alice", "--uid", "1000",
	"--workdir", "/home/alice/exp", "--name", "train", "--partition", "gpu", "--time-limit", "60",
	"--gres", "gpu:4", "--nodes", "2", "--argv", "train.sbatch", "--argv", "--lr=3e-4"}

var epilogVars = []string{
	"SLURM_SCRIPT_CONTEXT=epilog_slurmctld", "SLURM_JOB_ID=4242", "SLURM_JOB_UID=1000", "SLURM_JOB_USER=alice",
	"SLURM_JOB_ACCOUNT=ml", "SLURM_JOB_PARTITION=gpu", "SLURM_JOB_NAME=train", "SLURM_JOB_WORK_DIR=/home/alice/exp",
	"SLURM_JOB_NODELIST=gpu[01-02]", "SLURM_JOB_EXIT_CODE2=1:0", "SLURM_JOB_EXIT_CODE=256", "SLURM_JOB_DERIVED_EC=256",
	// The job starts after the submit hook of the same test ran.
	"SLURM_JOB_START_TIME=" + epoch(time.Now().Add(2*time.Second)), "SLURM_JOB_END_TIME=" + epoch(time.Now().Add(time.Hour)),
}

func epoch(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func fixedEstimator(_ context.Context, req *SubmitRequest) (*Estimate, error) {
	if req.TimeLimit != time.Hour || req.UID != "1000" || len(req.Argv) != 2 {
		return nil, errors.New("unexpected request")
	}
	return &Estimate{
		Record:          &store.EstimateRecord{EstimateS: 1800, Source: "similar", Confidence: 0.9},
		FingerprintHash: "fp1",
		Comment:         "schedmate: est=30m src=similar\nconf=0.9",
		Settings:        map[string]string{"time_min": "30", "Bad Key": "x", "admin_comment": "dup"},
	}, nil
}

func TestSubmitThenEpilogRecordsOneJob(t *testing.T) {
	h := newHarness(t)
	out, errOut := h.run(Steps{Estimator: fixedEstimator}, nil, submitArgs...)
	if want := "admin_comment=schedmate: est=30m src=similar conf=0.9\ntime_min=30\n"; out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	if errOut != "" {
		t.Errorf("stderr = %q", errOut)
	}
	jobs := make(chan *store.Job, 1)
	recovery := func(_ context.Context, j *store.Job) error { jobs <- j; return nil }
	out, errOut = h.run(Steps{Recovery: recovery}, epilogVars, "epilog")
	got := <-jobs
	if out != "" || errOut != "" {
		t.Errorf("epilog printed %q / %q", out, errOut)
	}
	if got == nil || got.State != "FAILED" || got.FingerprintHash != "fp1" {
		t.Fatalf("recovery saw %+v", got)
	}
	j := h.job("4242")
	if j.Script != "/home/alice/exp/train.sbatch" || j.TimeLimit != time.Hour || j.NumGPUs != 8 || j.Estimate == nil ||
		j.ExitCode != 1 || len(j.Nodes) != 2 || j.SubmitLine != "train.sbatch --lr=3e-4" {
		t.Errorf("stored job = %+v", j)
	}
}

func TestSubmitFailsOpen(t *testing.T) {
	slow := func(ctx context.Context, _ *SubmitRequest) (*Estimate, error) {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // ignores the deadline a little
		return &Estimate{Comment: "schedmate: late"}, nil
	}
	failing := func(context.Context, *SubmitRequest) (*Estimate, error) { return nil, errors.New("index missing") }
	panicking := func(context.Context, *SubmitRequest) (*Estimate, error) { panic("boom") }
	tests := []struct {
		name      string
		estimator Estimator
		args      []string
		wantErr   string
	}{
		{"no estimator", nil, submitArgs, ""},
		{"estimator error", failing, submitArgs, "index missing"},
		{"estimator panic", panicking, submitArgs, "internal error: boom"},
		{"estimator past deadline", slow, submitArgs, "deadline exceeded"},
		{"unknown flag from a newer lua", nil, append([]string{"--qos", "high"}, submitArgs...), ""},
		{"bad flag value", nil, []string{"submit", "--argv"}, "flag needs an argument"},
		{"unlimited time", nil, []string{"submit", "--uid", "1", "--name", "x", "--time-limit", "4294967295"}, ""},
		{"no user", nil, []string{"submit", "--name", "x"}, "neither uid nor user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			out, errOut := h.run(Steps{Estimator: tt.estimator}, []string{"SCHEDMATE_HOOKS_SUBMIT_DEADLINE=300ms"}, tt.args...)
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
			if tt.wantErr == "" && errOut != "" || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr = %q, want %q", errOut, tt.wantErr)
			}
		})
	}
}

func TestHooksSpoolWhenStoreLockedOrCorrupt(t *testing.T) {
	tests := []struct {
		name  string
		block func(t *testing.T, path string) (unblock func())
	}{
		{"locked", func(t *testing.T, path string) func() {
			st, err := store.Open(path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return func() { st.Close() }
		}},
		{"corrupt", func(t *testing.T, path string) func() {
			garbage := bytes.Repeat([]byte("not a database "), 1000)
			if err := os.WriteFile(path, garbage, 0o644); err != nil {
				t.Fatal(err)
			}
			return func() {
				data, _ := os.ReadFile(path)
				if !bytes.Equal(data, garbage) {
					t.Error("corrupt database was modified")
				}
				if err := os.Rename(path, path+".broken"); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			unblock := tt.block(t, h.dbPath)
			deadline := []string{"SCHEDMATE_HOOKS_SUBMIT_DEADLINE=1s", "SCHEDMATE_HOOKS_EPILOG_DEADLINE=2s"}
			out, errOut := h.run(Steps{Estimator: fixedEstimator}, deadline, submitArgs...)
			if !strings.HasPrefix(out, "admin_comment=") || !strings.Contains(errOut, "spooled") {
				t.Errorf("submit: stdout %q, stderr %q", out, errOut)
			}
			states := make(chan string, 1)
			recovery := func(_ context.Context, j *store.Job) error { states <- j.State; return nil }
			_, errOut = h.run(Steps{Recovery: recovery}, append(deadline, epilogVars...), "epilog")
			if state := <-states; !strings.Contains(errOut, "spooled") || state != "FAILED" {
				t.Errorf("epilog: stderr %q, recovery saw state %q", errOut, state)
			}
			if pending, _ := spool.New(spool.ForStore(h.dbPath)).Pending(); len(pending) != 2 {
				t.Fatalf("spool holds %d records, want 2", len(pending))
			}
			unblock()
			// The next hook drains the spool before recording its own end.
			_, errOut = h.run(Steps{}, append([]string{"SLURM_JOB_ID=4243", "SLURM_JOB_EXIT_CODE2=0:0"}, epilogVars[2:]...), "epilog")
			if errOut != "" {
				t.Errorf("draining epilog stderr = %q", errOut)
			}
			if j := h.job("4242"); j.FingerprintHash != "fp1" || j.State != "FAILED" {
				t.Errorf("drained job = %+v", j)
			}
			if pending, _ := spool.New(spool.ForStore(h.dbPath)).Pending(); len(pending) != 0 {
				t.Errorf("spool still holds %d records", len(pending))
			}
		})
	}
}

func TestEpilogFailsOpen(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		recovery Recovery
		wantErr  string
	}{
		{"no job in environment", []string{"SLURM_JOB_USER=alice"}, nil, "SLURM_JOB_ID"},
		{"recovery error", epilogVars, func(context.Context, *store.Job) error { return errors.New("scontrol down") }, "scontrol down"},
		{"recovery panic", epilogVars, func(context.Context, *store.Job) error { panic("nil map") }, "internal error: nil map"},
		{"recovery past deadline", epilogVars, func(ctx context.Context, _ *store.Job) error {
			<-ctx.Done()
			time.Sleep(20 * time.Millisecond)
			return nil
		}, "deadline exceeded"},
		{"stray argument", epilogVars, nil, "ignoring arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			args := []string{"epilog"}
			if tt.name == "stray argument" {
				args = append(args, "extra")
			}
			out, errOut := h.run(Steps{Recovery: tt.recovery}, append([]string{"SCHEDMATE_HOOKS_EPILOG_DEADLINE=300ms"}, tt.env...), args...)
			if out != "" || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stdout %q, stderr %q, want it to mention %q", out, errOut, tt.wantErr)
			}
		})
	}
}

func TestParseTimeLimit(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"60", time.Hour},
		{"", 0},
		{"0", 0},
		{"4294967294", 0},
		{"4294967295", 0},
		{"nil", 0},
		{" 5 ", 5 * time.Minute},
	}
	for _, tt := range tests {
		if got := history.ParseTimeLimit(tt.in); got != tt.want {
			t.Errorf("ParseTimeLimit(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
