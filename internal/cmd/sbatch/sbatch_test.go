package sbatch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/exitcode"
	"github.com/schedmate/schedmate/internal/factory"
	"github.com/schedmate/schedmate/internal/iostreams"
	"github.com/schedmate/schedmate/internal/runner/runnertest"
)

func TestSbatchPassesThrough(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(script, []byte("#!/bin/bash\n#SBATCH -t 10\npython run.py\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		stdout  string
		exit    int
		code    exitcode.Code
		wantEst bool
	}{
		{"submitted", []string{"--parsable", script, "--lr", "1"}, "4242\n", 0, exitcode.OK, true},
		{"sbatch refuses", []string{"-p", "nope", script}, "", 1, exitcode.Code(1), false},
		{"unknown option", []string{"--no-such-option", script}, "", 1, exitcode.Code(1), false},
		{"no script: sbatch decides", []string{"--wrap", "hostname"}, "Submitted batch job 7\n", 0, exitcode.OK, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stub := runnertest.New(t)
			call := stub.Expect(append([]string{"sbatch"}, tc.args...)...).Stdout(tc.stdout)
			if tc.exit != 0 {
				call.Fail(tc.exit, "sbatch: error: invalid partition specified: nope\n")
			}
			ios, _, out, errOut := iostreams.Test()
			f := factory.New(ios)
			f.Runner = stub
			f.Environ = []string{"SCHEDMATE_STORE_PATH=" + filepath.Join(t.TempDir(), "s.db")}
			cmd := NewCmd(f)
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			f.Close()
			if exitcode.Of(err) != tc.code {
				t.Errorf("exit %d (%v), want %d", exitcode.Of(err), err, tc.code)
			}
			if out.String() != tc.stdout {
				t.Errorf("stdout %q, want sbatch's %q", out.String(), tc.stdout)
			}
			if got := strings.Contains(errOut.String(), "schedmate: est="); got != tc.wantEst {
				t.Errorf("estimate printed = %v, stderr:\n%s", got, errOut.String())
			}
		})
	}
}
