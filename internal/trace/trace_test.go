package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/shareddata"
)

func readFixture(t *testing.T, name, format string) []Job {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := Read(f, format)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return jobs
}

func TestReadSWF(t *testing.T) {
	jobs := readFixture(t, "sample.swf", "swf")
	if len(jobs) != 80 {
		t.Fatalf("jobs = %d, want 80 (the job that never ran is dropped)", len(jobs))
	}
	j := jobs[0]
	if j.ID != "1" || j.User != "u1" || j.Name != "app2" || j.Class != "q1" || j.TimeLimit != 7200 ||
		j.State != "CANCELLED" || j.Duration() != 722 || j.Start != 693+596 || j.NCPUs != 4 {
		t.Errorf("first job = %+v", j)
	}
	for i := 1; i < len(jobs); i++ {
		if jobs[i].Submit < jobs[i-1].Submit {
			t.Fatal("jobs not in submit order")
		}
	}
}

func TestReadSacct(t *testing.T) {
	jobs := readFixture(t, "sample.sacct", "sacct")
	if len(jobs) != 4 {
		t.Fatalf("jobs = %d, want 4 (steps and the pending array skipped): %+v", len(jobs), jobs)
	}
	want := []struct {
		id, state  string
		dur, limit float64
		gpus       int
	}{
		{"1001", "COMPLETED", 36000, 86400, 8},
		{"1002", "CANCELLED", 2700, 7200, 0},
		{"1004_1", "TIMEOUT", 3600, 14400, 1},
		{"1005", "FAILED", 10, 0, 0},
	}
	for i, w := range want {
		j := jobs[i]
		if j.ID != w.id || j.State != w.state || j.Duration() != w.dur || j.TimeLimit != w.limit || j.GPUs != w.gpus {
			t.Errorf("job %d = %+v, want %+v", i, j, w)
		}
	}
	if jobs[0].WorkDir != "/home/alice/llm" || jobs[0].NNodes != 2 || jobs[0].SubmitLine != "sbatch train.sbatch" {
		t.Errorf("fields lost: %+v", jobs[0])
	}
}

func TestReadEagleAndGoogleSamples(t *testing.T) {
	dir := shareddata.Dir(t, "traces")
	for _, tc := range []struct {
		path, format string
		n            int
	}{
		{"eagle-sample/jobs.csv", "eagle", 1000},
		{"google2011/jobs.csv", "google", 172186},
	} {
		f, err := os.Open(filepath.Join(dir, tc.path))
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := Read(f, tc.format)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != tc.n {
			t.Errorf("%s: %d jobs, want %d", tc.path, len(jobs), tc.n)
		}
		if tc.format == "eagle" && (jobs[0].TimeLimit <= 0 || jobs[0].Name == "" || jobs[0].WorkDir == "") {
			t.Errorf("eagle fields missing: %+v", jobs[0])
		}
		if tc.format == "google" && (jobs[0].LogicalName == "" || jobs[0].Class == "") {
			t.Errorf("google fields missing: %+v", jobs[0])
		}
	}
}

func TestReadRejects(t *testing.T) {
	tests := []struct {
		name, format, input string
		want                error
	}{
		{"empty", "google", "", ErrFormat},
		{"binary", "swf", "\x00\x01\x02ELF", ErrFormat},
		{"unknown format", "pbs", "x", ErrUnknownFormat},
		{"missing column", "google", "job_id,user\n1,u\n", ErrFormat},
		{"bad number", "google", "job_id,submit_time_s,start_time_s,end_time_s,user,job_name\n1,x,1,2,u,n\n", ErrFormat},
		{"bad swf", "swf", "1 2 3\n", ErrFormat},
		{"header only", "eagle", "job_id,user,submit_time,start_time,end_time\n", ErrFormat},
		{"bad eagle time", "eagle", "job_id,user,submit_time,start_time,end_time\n1,u,yesterday,x,y\n", ErrFormat},
		{"sacct no submit", "sacct", "JobID|User\n1|u\n", ErrFormat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.input), tc.format)
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	for _, name := range []string{"sample.swf", "sample.sacct"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:min(len(data), 2000)], uint8(0))
	}
	f.Add([]byte("job_id,submit_time_s,start_time_s,end_time_s,user,job_name\n1,1,2,3,u,n\n"), uint8(1))
	f.Add([]byte("job_id,user,submit_time,start_time,end_time\n1,u,2019-01-01 00:00:00,2019-01-01 00:00:01,2019-01-01 00:01:00\n"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		format := Formats[int(which)%len(Formats)]
		jobs, err := Read(bytes.NewReader(data), format)
		if err == nil && len(jobs) == 0 {
			t.Fatal("no error and no jobs")
		}
		for _, j := range jobs {
			if j.Duration() < 0 {
				t.Fatalf("negative duration: %+v", j)
			}
		}
	})
}
