package estimate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/internal/store"
)

const script = `#!/bin/bash
#SBATCH --job-name=resnet
#SBATCH --time=02:00:00
python train.py --model resnet50 --epochs 90 --batch-size 256
`

func setup(t *testing.T) (dir, db string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(t.TempDir(), "s.db")
}

func runCmd(t *testing.T, db string, args ...string) (string, string, error) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := factory.New(ios)
	f.Environ = []string{"SCHEDMATE_STORE_PATH=" + db}
	cmd := NewCmd(f)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	err := cmd.Execute()
	f.Close()
	return out.String(), errOut.String(), err
}

func TestEstimateJSONWithoutHistory(t *testing.T) {
	dir, db := setup(t)
	out, _, err := runCmd(t, db, "--json", "--chdir", dir, "-t", "30", filepath.Join(dir, "job.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"estimate_s", "low_s", "high_s", "source", "confidence", "matches", "complete_s", "p_early"} {
		if _, ok := r[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}
	// the command line's -t 30 overrides the script's 2h
	if r["source"] != advisor.SourceTimeLimit || r["estimate_s"] != float64(1800) {
		t.Errorf("source %v estimate %v, want the 30 min limit", r["source"], r["estimate_s"])
	}
	if m, ok := r["matches"].([]any); !ok || len(m) != 0 {
		t.Errorf("matches = %v, want []", r["matches"])
	}
}

// fingerprinted is the request for dir's job.sh and its advice with no
// history: the job's fingerprint and metadata.
func fingerprinted(t *testing.T, dir string) (advisor.SubmitRequest, *advisor.SubmitAdvice) {
	t.Helper()
	req, err := Request([]string{"--chdir", dir, filepath.Join(dir, "job.sh")})
	if err != nil {
		t.Fatal(err)
	}
	adv, err := advisor.ForSubmit(context.Background(), advisor.NoHistory, req, advisor.Policy{}, advisor.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return req, adv
}

func TestEstimateFromHistory(t *testing.T) {
	dir, db := setup(t)
	st, err := store.Open(db, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	req, adv := fingerprinted(t, dir)
	for i := range 3 {
		start := time.Unix(1700000000+int64(i)*9000, 0)
		j := &store.Job{JobID: string(rune('7' + i)), User: req.Job.User, Name: "resnet", WorkDir: dir, State: "COMPLETED",
			Start: start, End: start.Add(time.Duration(80+i*5) * time.Minute), TimeLimit: 2 * time.Hour, Metadata: adv.Metadata}
		if err := advisor.IndexJobs(st, j); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	out, _, err := runCmd(t, db, "--chdir", dir, filepath.Join(dir, "job.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Estimate:", "1h25m", "Source:", "resubmission", "Similar jobs:", "model=resnet50"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestEstimateBadScript(t *testing.T) {
	dir, db := setup(t)
	bin := filepath.Join(dir, "bin.sh")
	if err := os.WriteFile(bin, []byte{0x7f, 'E', 'L', 'F', 0}, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code exitcode.Code
	}{
		{[]string{filepath.Join(dir, "missing.sh")}, exitcode.NotFound},
		{[]string{bin}, exitcode.DataErr},
		{[]string{"-p"}, exitcode.Usage},
		{[]string{dir}, exitcode.DataErr},
	} {
		_, _, err := runCmd(t, db, tc.args...)
		if exitcode.Of(err) != tc.code {
			t.Errorf("%v: exit %d (%v), want %d", tc.args, exitcode.Of(err), err, tc.code)
		}
	}
}
