package slurm

import (
	"os"
	"strings"
	"testing"
)

func seed(f *testing.F, fixture string, extra ...string) {
	if b, err := os.ReadFile("testdata/22.05/" + fixture); err == nil {
		f.Add(string(b))
	}
	for _, s := range extra {
		f.Add(s)
	}
}

func FuzzParseSqueue(f *testing.F) {
	seed(f, "squeue.txt", strings.Repeat("x"+FieldSep, 19)+"y")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseSqueue(strings.NewReader(s)) })
}

func FuzzParseScontrolJobs(f *testing.F) {
	seed(f, "scontrol-show-job.txt", "JobId=1 NodeList=n[1-")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseScontrolJobs(strings.NewReader(s)) })
}

func FuzzParseScontrolNodes(f *testing.F) {
	seed(f, "scontrol-show-node.txt", "NodeName=a Reason=x [y@z]")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseScontrolNodes(strings.NewReader(s)) })
}

func FuzzParseSacct(f *testing.F) {
	seed(f, "sacct-P.txt", "JobID|State\n1|CANCELLED by 0\n")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseSacct(strings.NewReader(s)) })
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1-02:03:04", "05:30", "UNLIMITED", "1.5", "-", "9999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseDuration(s); err == nil && d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
	})
}

func FuzzExpandStdioPattern(f *testing.F) {
	for _, s := range []string{"%x-%j.out", "%8j", "%", "%%", "%99999j"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := ExpandStdioPattern(s, Job{ID: "1", Name: "n", ArrayTaskID: "3"})
		if len(out) > len(s)*100+100 {
			t.Fatalf("expansion of %q too long: %d", s, len(out))
		}
	})
}
