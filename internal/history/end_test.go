package history

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/store"
)

// epilogEnv is an EpilogSlurmctld environment as Slurm 23.x sets it.
func epilogEnv(overrides map[string]string) map[string]string {
	env := map[string]string{
		"SLURM_SCRIPT_CONTEXT":    "epilog_slurmctld",
		"SLURM_JOB_ID":            "4242",
		"SLURM_JOB_UID":           "1000",
		"SLURM_JOB_USER":          "alice",
		"SLURM_JOB_GID":           "1000",
		"SLURM_JOB_GROUP":         "alice",
		"SLURM_JOB_ACCOUNT":       "ml",
		"SLURM_JOB_PARTITION":     "gpu",
		"SLURM_JOB_NAME":          "train",
		"SLURM_JOB_WORK_DIR":      "/home/alice/exp",
		"SLURM_JOB_NODELIST":      "gpu[01-02]",
		"SLURM_JOB_START_TIME":    "1700000100",
		"SLURM_JOB_END_TIME":      "1700003700",
		"SLURM_JOB_EXIT_CODE":     "0",
		"SLURM_JOB_EXIT_CODE2":    "0:0",
		"SLURM_JOB_DERIVED_EC":    "0",
		"SLURM_JOB_STDOUT":        "logs/%x-%j.out",
		"SLURM_JOB_RESTART_COUNT": "0",
	}
	for k, v := range overrides {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	return env
}

func TestEndFromEnv(t *testing.T) {
	start, end := time.Unix(1700000100, 0).UTC(), time.Unix(1700003700, 0).UTC()
	tests := []struct {
		name string
		env  map[string]string
		want End
	}{
		{
			name: "plain job",
			env:  epilogEnv(nil),
			want: End{UID: "1000", Job: store.Job{
				JobID: "4242", User: "alice", Account: "ml", Partition: "gpu", Name: "train",
				WorkDir: "/home/alice/exp", NodeList: "gpu[01-02]", Nodes: []string{"gpu01", "gpu02"}, NumNodes: 2,
				Start: start, End: end, StdOut: "/home/alice/exp/logs/train-4242.out", StdErr: "/home/alice/exp/logs/train-4242.out",
				Source: "epilog",
			}},
		},
		{
			name: "array task with signal, default output and separate stderr",
			env: epilogEnv(map[string]string{
				"SLURM_JOB_ID": "4300", "SLURM_ARRAY_JOB_ID": "4290", "SLURM_ARRAY_TASK_ID": "7",
				"SLURM_JOB_EXIT_CODE2": "0:9", "SLURM_JOB_STDOUT": "", "SLURM_JOB_STDERR": "/scratch/%u/%A_%a.err",
				"SLURM_JOB_RESTART_COUNT": "2", "SLURM_JOB_STATE": "CANCELLED",
			}),
			want: End{UID: "1000", SlurmState: "CANCELLED", Job: store.Job{
				JobID: "4290_7", ArrayJobID: "4290", ArrayTaskID: "7", Metadata: map[string]string{"job_id_raw": "4300"},
				User: "alice", Account: "ml", Partition: "gpu", Name: "train",
				WorkDir: "/home/alice/exp", NodeList: "gpu[01-02]", Nodes: []string{"gpu01", "gpu02"}, NumNodes: 2,
				Start: start, End: end, Signal: 9, RequeueCount: 2,
				StdOut: "/home/alice/exp/slurm-4290_7.out", StdErr: "/scratch/alice/4290_7.err",
				Source: "epilog",
			}},
		},
		{
			name: "raw wait status only, job never started",
			env: epilogEnv(map[string]string{
				"SLURM_JOB_EXIT_CODE2": "", "SLURM_JOB_EXIT_CODE": "256", "SLURM_JOB_NODELIST": "(null)",
				"SLURM_JOB_START_TIME": "0", "SLURM_JOB_STDOUT": "/abs/out.txt",
			}),
			want: End{UID: "1000", Job: store.Job{
				JobID: "4242", User: "alice", Account: "ml", Partition: "gpu", Name: "train",
				WorkDir: "/home/alice/exp", End: end, ExitCode: 1,
				StdOut: "/abs/out.txt", StdErr: "/abs/out.txt", Source: "epilog",
			}},
		},
		{
			name: "derived exit code as last resort",
			env:  epilogEnv(map[string]string{"SLURM_JOB_EXIT_CODE2": "", "SLURM_JOB_EXIT_CODE": "", "SLURM_JOB_DERIVED_EC": "253"}),
			want: End{UID: "1000", Job: store.Job{
				JobID: "4242", User: "alice", Account: "ml", Partition: "gpu", Name: "train",
				WorkDir: "/home/alice/exp", NodeList: "gpu[01-02]", Nodes: []string{"gpu01", "gpu02"}, NumNodes: 2,
				Start: start, End: end, Signal: 125,
				StdOut: "/home/alice/exp/logs/train-4242.out", StdErr: "/home/alice/exp/logs/train-4242.out", Source: "epilog",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EndFromEnv(tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("EndFromEnv:\n got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestEndFromEnvRejects(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no job id", epilogEnv(map[string]string{"SLURM_JOB_ID": ""}), "SLURM_JOB_ID"},
		{"job id not numeric", epilogEnv(map[string]string{"SLURM_JOB_ID": "12;rm"}), "SLURM_JOB_ID"},
		{"bad exit code2", epilogEnv(map[string]string{"SLURM_JOB_EXIT_CODE2": "abc"}), "SLURM_JOB_EXIT_CODE2"},
		{"bad raw exit", epilogEnv(map[string]string{"SLURM_JOB_EXIT_CODE2": "", "SLURM_JOB_EXIT_CODE": "-1"}), "SLURM_JOB_EXIT_CODE"},
		{"bad start", epilogEnv(map[string]string{"SLURM_JOB_START_TIME": "yesterday"}), "SLURM_JOB_START_TIME"},
		{"bad restart count", epilogEnv(map[string]string{"SLURM_JOB_RESTART_COUNT": "x"}), "SLURM_JOB_RESTART_COUNT"},
		{"bad node list", epilogEnv(map[string]string{"SLURM_JOB_NODELIST": "gpu[3-1]"}), "SLURM_JOB_NODELIST"},
		{"huge value", epilogEnv(map[string]string{"SLURM_JOB_NAME": strings.Repeat("x", maxEnvValue+1)}), "SLURM_JOB_NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EndFromEnv(tt.env)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %s", err, tt.want)
			}
		})
	}
}

func TestDeriveState(t *testing.T) {
	hour := time.Hour
	tests := []struct {
		slurm          string
		code, sig      int
		elapsed, limit time.Duration
		want           string
	}{
		{"", 0, 0, time.Minute, hour, "COMPLETED"},
		{"", 1, 0, time.Minute, hour, "FAILED"},
		{"", 0, 11, time.Minute, 0, "FAILED"},
		{"", 0, 15, time.Minute, hour, "CANCELLED"},
		{"", 0, 9, time.Minute, 0, "CANCELLED"},
		{"", 143, 0, time.Minute, hour, "CANCELLED"}, // the shell exited 128+SIGTERM after scancel
		{"COMPLETING", 143, 0, time.Minute, hour, "CANCELLED"},
		{"", 0, 15, hour, hour, "TIMEOUT"},
		{"", 0, 0, hour + time.Minute, hour, "TIMEOUT"},
		{"", 137, 0, hour, hour, "TIMEOUT"},
		{"", 1, 0, hour, hour, "FAILED"},
		{"", 0, 125, time.Minute, hour, "OUT_OF_MEMORY"},
		{"", 0, 126, time.Minute, hour, "NODE_FAIL"},
		{"NODE_FAIL", 0, 0, time.Minute, hour, "NODE_FAIL"},
		{"CANCELLED by 1000", 0, 0, time.Minute, hour, "CANCELLED"},
		{"timeout+", 0, 0, time.Minute, hour, "TIMEOUT"},
		{"OOM", 0, 0, time.Minute, hour, "OUT_OF_MEMORY"},
		{"11", 0, 0, time.Minute, hour, "OUT_OF_MEMORY"},
		{"32775", 0, 0, time.Minute, hour, "NODE_FAIL"}, // NODE_FAIL with JOB_REQUEUE flag bits
		{"RUNNING", 1, 0, time.Minute, hour, "FAILED"},
		{"garbage", 0, 0, time.Minute, hour, "COMPLETED"},
	}
	for _, tt := range tests {
		if got := DeriveState(tt.slurm, tt.code, tt.sig, tt.elapsed, tt.limit); got != tt.want {
			t.Errorf("DeriveState(%q, %d, %d, %v, %v) = %s, want %s", tt.slurm, tt.code, tt.sig, tt.elapsed, tt.limit, got, tt.want)
		}
	}
}

func FuzzEndFromEnv(f *testing.F) {
	f.Add("4242", "gpu[01-02]", "0:9", "1700000000", "%x-%j.out", "CANCELLED by 0")
	f.Add("1", "(null)", "", "0", "", "")
	f.Add("99999999999999999999", "a[1-3],b[07-09]x", "1:0", "-5", "%%%A_%a", "32775")
	f.Fuzz(func(t *testing.T, id, nodes, exit2, start, stdout, state string) {
		env := epilogEnv(map[string]string{
			"SLURM_JOB_ID": id, "SLURM_JOB_NODELIST": nodes, "SLURM_JOB_EXIT_CODE2": exit2,
			"SLURM_JOB_START_TIME": start, "SLURM_JOB_STDOUT": stdout, "SLURM_JOB_STATE": state,
		})
		e, err := EndFromEnv(env)
		if err != nil {
			return
		}
		if e.Job.JobID == "" || e.Job.NumNodes != len(e.Job.Nodes) {
			t.Fatalf("inconsistent end: %+v", e.Job)
		}
		_ = DeriveState(e.SlurmState, e.Job.ExitCode, e.Job.Signal, e.Job.Duration(), time.Hour)
	})
}

func TestFinishRecordsAShellKilledBySignalAsSlurmDoes(t *testing.T) {
	tests := []struct {
		code, sig         int
		state             string
		wantCode, wantSig int
	}{
		{143, 0, "", 0, 15},        // bash exited 128+SIGTERM after scancel
		{0, 15, "", 0, 15},         // bash died of SIGTERM
		{3, 0, "", 3, 0},           // a plain failure is kept as is
		{143, 0, "FAILED", 143, 0}, // Slurm's own verdict wins and nothing is rewritten
	}
	for _, tt := range tests {
		j := &store.Job{}
		finish(j, &store.Job{ExitCode: tt.code, Signal: tt.sig}, tt.state)
		if j.ExitCode != tt.wantCode || j.Signal != tt.wantSig {
			t.Errorf("exit %d:%d (slurm %q) recorded as %d:%d (%s), want %d:%d", tt.code, tt.sig, tt.state, j.ExitCode, j.Signal, j.State, tt.wantCode, tt.wantSig)
		}
	}
}
