package diagnose

import (
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

func runCmd(t *testing.T, jsonOut bool, args ...string) (string, error) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	f := factory.New(ios)
	f.JSON = jsonOut
	cmd := NewCmd(f)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(out)
	err := cmd.Execute()
	return out.String(), err
}

func writeLog(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const oomLog = "step 1 | loss 2.1 | 400 ms/step\nTraceback (most recent call last):\n  File \"t.py\", line 3, in <module>\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"

func TestDiagnoseJSON(t *testing.T) {
	out, err := runCmd(t, true, "--log", writeLog(t, "oom.log", oomLog))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if r["category"] != "script" || r["component"] != "oom" || r["line"] != float64(4) {
		t.Fatalf("report %v", r)
	}
	for _, k := range []string{"text", "confidence", "evidence", "action", "lines_classified", "log"} {
		if _, ok := r[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}
}

func TestDiagnoseNoneHasNullLine(t *testing.T) {
	out, err := runCmd(t, true, "--log", writeLog(t, "ok.log", "step 1 | loss 2.1 | 400 ms/step\ndone\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"line": null`) || !strings.Contains(out, `"category": "none"`) {
		t.Fatalf("output %s", out)
	}
}

func TestDiagnoseHuman(t *testing.T) {
	out, err := runCmd(t, false, "--log", writeLog(t, "oom.log", oomLog))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"script / oom", "root cause: line 4", "> 4 │ torch.OutOfMemoryError", "action:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour without a terminal")
	}
}

func TestDiagnoseErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		code exitcode.Code
	}{
		{"no arguments", []string{}, exitcode.Usage},
		{"both job and log", []string{"12", "--log", "x"}, exitcode.Usage},
		{"missing file", []string{"--log", filepath.Join(dir, "nope.log")}, exitcode.NotFound},
		{"empty file", []string{"--log", writeLog(t, "empty.log", "")}, exitcode.DataErr},
		{"binary file", []string{"--log", writeLog(t, "bin.log", "\x7fELF\x00\x00\x01")}, exitcode.DataErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runCmd(t, false, tt.args...)
			if got := exitcode.Of(err); got != tt.code {
				t.Fatalf("exit code %d (%v), want %d", got, err, tt.code)
			}
		})
	}
}

// TestDiagnoseGolden checks the human output, colour off, against
// testdata/<name>.golden; run with -update to rewrite them.
func TestDiagnoseGolden(t *testing.T) {
	tests := []struct{ name, log string }{
		{"script-oom", oomLog},
		{"none", "step 1 | loss 2.1 | 400 ms/step\nstep 2 | loss 2.0 | 401 ms/step\ntraining done\n"},
		{"network-ib", "step 10 | loss 2.31 | 412 ms/step\n" +
			"kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer 10.0.35.1<49189> with error 4, opcode 5327, len 5327, vendor err 81 (Send)\n" +
			"kolyoz2:25146:25854 [0] NCCL INFO transport/net.cc:1137 -> 6\n" +
			"kolyoz2:25146:25854 [0] NCCL INFO proxy.cc:698 -> 6\n" +
			"kolyoz2:25146:25852 [0] NCCL INFO [Service thread] Connection closed by localRank 0\n"},
		{"script-traceback", "[2020-12-24 16:25:13,902] [INFO] [launch.py:102:main] Setting CUDA_VISIBLE_DEVICES=0,1\n" +
			"Traceback (most recent call last):\n  File \"fail.py\", line 1, in <module>\n    garbageeeeee\n" +
			"NameError: name 'garbageeeeee' is not defined\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := writeLog(t, tt.name+".log", tt.log)
			out, err := runCmd(t, false, "--log", log)
			if err != nil {
				t.Fatal(err)
			}
			out = strings.ReplaceAll(out, log, tt.name+".log")
			golden.Check(t, filepath.Join("testdata", tt.name+".golden"), []byte(out))
		})
	}
}
