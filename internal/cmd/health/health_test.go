package health

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/config"
	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/internal/shareddata"
)

// run executes `health args...` and returns stdout, stderr and the exit code.
func run(t *testing.T, jsonOut bool, stdin string, args ...string) (string, string, exitcode.Code) {
	t.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(stdin)
	f := factory.New(ios)
	f.Environ = []string{"SLURMD_NODENAME=n01", "SCHEDMATE_STORE_PATH=" + filepath.Join(t.TempDir(), "s.db")}
	f.JSON = jsonOut
	defer f.Close()
	cmd := NewCmd(f)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), exitcode.Of(err)
}

func TestParseJSONOverCorpus(t *testing.T) {
	dir := shareddata.Dir(t, "nccl")
	files, _ := filepath.Glob(filepath.Join(dir, "0*.txt"))
	if len(files) == 0 {
		t.Fatal("no corpus files")
	}
	for _, file := range files {
		out, errOut, code := run(t, true, "", "parse", file)
		if code != exitcode.OK {
			t.Fatalf("%s: exit %d: %s", file, code, errOut)
		}
		var obj map[string]any
		dec := json.NewDecoder(strings.NewReader(out))
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("%s: not JSON: %v", file, err)
		}
		if dec.More() {
			t.Fatalf("%s: more than one JSON value", file)
		}
		for _, key := range []string{"collective", "ranks", "avg_busbw_gbps", "max_busbw_gbps", "wrong", "outcome", "rows"} {
			if _, ok := obj[key]; !ok {
				t.Errorf("%s: key %q missing", filepath.Base(file), key)
			}
		}
	}
}

func TestParseInputs(t *testing.T) {
	tmp := t.TempDir()
	binary := filepath.Join(tmp, "core")
	if err := os.WriteFile(binary, []byte("\x7fELF\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(tmp, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	healthy, err := os.ReadFile(filepath.Join("..", "..", "..", "test", "ncclstandin", "recordings", "healthy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		stdin string
		code  exitcode.Code
		want  string
	}{
		{"missing file", []string{"parse", filepath.Join(tmp, "nope")}, "", exitcode.NotFound, ""},
		{"binary file", []string{"parse", binary}, "", exitcode.DataErr, ""},
		{"empty file", []string{"parse", empty}, "", exitcode.DataErr, ""},
		{"directory", []string{"parse", tmp}, "", exitcode.DataErr, ""},
		{"stdin", []string{"parse", "-"}, string(healthy), exitcode.OK, "outcome     ok"},
		{"no argument", []string{"parse"}, "", exitcode.Error, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, code := run(t, false, tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, out %q; want %d and %q", code, out, tt.code, tt.want)
			}
		})
	}
}

func TestCheckWithoutGPUIsNotAFailure(t *testing.T) {
	out, errOut, code := run(t, true, "", "check", "--no-act", "--xid-wait", "0")
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Node   string `json:"node"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Node != "n01" || (got.Status != "unavailable" && got.Status != "pass") {
		t.Fatalf("got %+v", got)
	}
}

func TestThresholdsFromConfig(t *testing.T) {
	h := config.Default().Health
	h.MultiNodeBusBWThresholds = map[string]float64{"ib4x400": 150}
	ts := thresholds(h)
	if len(ts) == 0 || ts[0].Feature == "" {
		t.Fatalf("thresholds %+v: want feature entries first", ts)
	}
	var sawMulti bool
	for _, th := range ts {
		if th.MultiNode && th.MinBusBW == 150 {
			sawMulti = true
		}
	}
	if !sawMulti {
		t.Fatal("multi-node threshold missing")
	}
}

func TestNodeName(t *testing.T) {
	if n, _ := nodeName("x", []string{"SLURMD_NODENAME=y"}); n != "x" {
		t.Errorf("flag ignored: %s", n)
	}
	if n, _ := nodeName("", []string{"SLURMD_NODENAME=y"}); n != "y" {
		t.Errorf("env ignored: %s", n)
	}
	if n, err := nodeName("", nil); err != nil || n == "" || strings.Contains(n, ".") {
		t.Errorf("hostname: %q %v", n, err)
	}
}
