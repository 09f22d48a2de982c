package slurm

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/golden"
)

// TestFixtures parses output recorded from a real Slurm 22.05 and compares
// the result with golden JSON.
func TestFixtures(t *testing.T) {
	time.Local = time.UTC
	parsers := map[string]func(f []byte) (any, error){
		"squeue.txt":             func(b []byte) (any, error) { return ParseSqueue(bytes.NewReader(b)) },
		"scontrol-show-job.txt":  func(b []byte) (any, error) { return ParseScontrolJobs(bytes.NewReader(b)) },
		"scontrol-show-node.txt": func(b []byte) (any, error) { return ParseScontrolNodes(bytes.NewReader(b)) },
		"sacct-P.txt":            func(b []byte) (any, error) { return ParseSacct(bytes.NewReader(b)) },
	}
	dirs, _ := filepath.Glob("testdata/*.*")
	for _, dir := range dirs {
		for name, parse := range parsers {
			path := filepath.Join(dir, name)
			raw, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			t.Run(path, func(t *testing.T) {
				got, err := parse(raw)
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				js, _ := json.MarshalIndent(got, "", "  ")
				golden.Check(t, strings.TrimSuffix(path, ".txt")+".golden.json", append(js, '\n'))
			})
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"00:10:00", 10 * time.Minute, false},
		{"1-02:03:00", 26*time.Hour + 3*time.Minute, false},
		{"05:30", 5*time.Minute + 30*time.Second, false},
		{"90", 90 * time.Minute, false},
		{"2-12", 60 * time.Hour, false},
		{"1-00:30", 24*time.Hour + 30*time.Minute, false},
		{"00:00:01.500", 1500 * time.Millisecond, false},
		{"UNLIMITED", 0, false},
		{"Partition_Limit", 0, false},
		{"Unknown", 0, false},
		{"None", 0, false},
		{"", 0, false},
		{"ab:cd", 0, true},
		{"1:2:3:4", 0, true},
		{"-1", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseGPUs(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"billing=1,cpu=1,gres/gpu=2,node=1", 2},
		{"cpu=8,gres/gpu=4,gres/gpu:a100=4", 4},
		{"cpu=8,gres/gpu:a100=2,gres/gpu:h100=1", 3},
		{"gpu:2", 2},
		{"gpu:a100:2", 2},
		{"gres:gpu:2", 2},
		{"gres:gpu:a100:3", 3},
		{"gpu:4(S:0-1)", 4},
		{"gpu:a100:2(IDX:0-1),shard:2", 2},
		{"gpu", 1},
		{"gpu:a100", 1},
		{"cpu=1,node=1", 0},
		{"(null)", 0},
		{"", 0},
	}
	for _, tt := range tests {
		if got := ParseGPUs(tt.in); got != tt.want {
			t.Errorf("ParseGPUs(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestStateAndExitCode(t *testing.T) {
	for in, want := range map[string]string{"CANCELLED by 0": "CANCELLED", "running": "RUNNING", "COMPLETING+": "COMPLETING", "OUT_OF_MEMORY": "OUT_OF_MEMORY"} {
		if got := NormalizeState(in); got != want {
			t.Errorf("NormalizeState(%q) = %q, want %q", in, got, want)
		}
	}
	code, sig, err := ParseExitCode("1:9")
	if err != nil || code != 1 || sig != 9 {
		t.Errorf("ParseExitCode(1:9) = %d, %d, %v", code, sig, err)
	}
	if _, _, err := ParseExitCode("x:0"); err == nil {
		t.Error("ParseExitCode(x:0): want error")
	}
}

func TestParseKeyValues(t *testing.T) {
	kv := ParseKeyValues("JobId=7 Command=/bin/run a b AdminComment=schedmate: est=60s  Comment=hello world  StdOut=/tmp/o Reason=x")
	want := map[string]string{"JobId": "7", "Command": "/bin/run a b", "AdminComment": "schedmate: est=60s", "Comment": "hello world", "StdOut": "/tmp/o", "Reason": "x"}
	for k, v := range want {
		if kv[k] != v {
			t.Errorf("%s = %q, want %q", k, kv[k], v)
		}
	}
}

func TestParseSacctSubsetAndErrors(t *testing.T) {
	jobs, err := ParseSacct(strings.NewReader("State|JobID|ElapsedRaw|AllocTRES\nCANCELLED by 1000|42|10|gres/gpu=8\nCOMPLETED|42.batch|1|\n"))
	if err != nil || len(jobs) != 1 || jobs[0].State != "CANCELLED" || jobs[0].GPUs != 8 {
		t.Fatalf("ParseSacct = %+v, %v", jobs, err)
	}
	jobs, err = ParseSacct(strings.NewReader("JobID|JobName|State|ExitCode|SubmitLine\n9|a | b|PENDING|0:0|sbatch -J a | b x\n"))
	if err != nil || len(jobs) != 1 || jobs[0].Name != "a | b" || jobs[0].Command != "sbatch -J a | b x" {
		t.Fatalf("separator in free text: %+v, %v", jobs, err)
	}
	for name, in := range map[string]string{"empty": "", "no jobid": "State|User\nX|y\n", "binary": "JobID\n\x00\x01\n", "short": "JobID|State\n1\n", "bad time": "JobID|Start\n1|yesterday\n"} {
		if _, err := ParseSacct(strings.NewReader(in)); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
}

func TestExpandStdioPattern(t *testing.T) {
	job := Job{ID: "123", User: "alice", Name: "train", NodeList: "n[1-2]", Nodes: []string{"n1", "n2"}, WorkDir: "/home/alice"}
	task := Job{ID: "130", ArrayJobID: "128", ArrayTaskID: "2", User: "bob", Name: "sweep", WorkDir: "/w"}
	tests := []struct {
		pattern string
		job     Job
		want    string
	}{
		{"/tmp/%x-%j.out", job, "/tmp/train-123.out"},
		{"%u/%N/%n.%t.log", job, "alice/n1/0.0.log"},
		{"out-%8j", job, "out-00000123"},
		{"100%%-%J", job, "100%-123"},
		{"arr-%A_%a.out", task, "arr-128_2.out"},
		{"%j-%4a", task, "130-0002"},
		{"", job, "/home/alice/slurm-123.out"},
		{"", task, "/w/slurm-128_2.out"},
		{"odd%q%", job, "odd%q%"},
	}
	for _, tt := range tests {
		if got := ExpandStdioPattern(tt.pattern, tt.job); got != tt.want {
			t.Errorf("ExpandStdioPattern(%q) = %q, want %q", tt.pattern, got, tt.want)
		}
	}
}

func TestReasonIsOurs(t *testing.T) {
	r := Reason("gpu", "xid 79 on GPU 2")
	if r != "schedmate: gpu: xid 79 on GPU 2" || !IsOurs(r) || IsOurs("Not responding") {
		t.Errorf("Reason = %q", r)
	}
}
