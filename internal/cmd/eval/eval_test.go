package eval

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/golden"
	"github.com/schedmate/schedmate/internal/iostreams"
)

// swfFixture is the SWF sample shared with the trace package.
var swfFixture = filepath.Join("..", "..", "trace", "testdata", "sample.swf")

func runCmd(t *testing.T, jsonOut bool, args ...string) (string, error) {
	t.Helper()
	return runCmdEnv(t, nil, jsonOut, args...)
}

// runCmdEnv is runCmd with more environment.
func runCmdEnv(t *testing.T, env []string, jsonOut bool, args ...string) (string, error) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	f := factory.New(ios)
	f.JSON = jsonOut
	f.Environ = append([]string{"SCHEDMATE_STORE_PATH=" + filepath.Join(t.TempDir(), "s.db"), "XDG_CONFIG_HOME=" + t.TempDir()}, env...)
	cmd := NewCmd(f)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(out)
	err := cmd.Execute()
	return out.String(), err
}

func TestEvalEstimateTable(t *testing.T) {
	out, err := runCmd(t, false, "estimate", "--trace", swfFixture, "--format", "swf")
	if err != nil {
		t.Fatal(err)
	}
	out = strings.Replace(out, swfFixture, "sample.swf", 1)
	golden.Check(t, filepath.Join("testdata", "swf.golden"), []byte(out))
}

func TestEvalEstimateJSONAndPredictions(t *testing.T) {
	pred := filepath.Join(t.TempDir(), "pred.csv")
	out, err := runCmd(t, true, "estimate", "--trace", swfFixture, "--format", "swf", "--predictions", pred)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Jobs    int                           `json:"jobs"`
		Methods map[string]map[string]float64 `json:"methods"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, m := range []string{"schedmate", "time_limit", "user_last2_mean", "user_last5_median", "user_name_median", "global_median"} {
		s, ok := r.Methods[m]
		if !ok {
			t.Fatalf("method %s missing", m)
		}
		for _, k := range []string{"within_2x", "within_100pct", "median_rel_err", "mae_s"} {
			if _, ok := s[k]; !ok {
				t.Errorf("%s lacks %s", m, k)
			}
		}
	}
	f, err := os.Open(pred)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != r.Jobs+1 || rows[0][0] != "job_id" || rows[0][1] != "predicted_s" {
		t.Errorf("predictions: %d rows, header %v", len(rows), rows[0])
	}
}

func TestEvalEstimateBadInput(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "bin")
	if err := os.WriteFile(binary, []byte{0, 1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code exitcode.Code
	}{
		{"missing file", []string{"--trace", filepath.Join(dir, "nope"), "--format", "swf"}, exitcode.NotFound},
		{"binary file", []string{"--trace", binary, "--format", "google"}, exitcode.DataErr},
		{"unknown format", []string{"--trace", swfFixture, "--format", "pbs"}, exitcode.Usage},
		{"wrong format", []string{"--trace", swfFixture, "--format", "google"}, exitcode.DataErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCmd(t, false, append([]string{"estimate"}, tc.args...)...)
			if exitcode.Of(err) != tc.code {
				t.Errorf("exit %d (%v), want %d", exitcode.Of(err), err, tc.code)
			}
		})
	}
}
