package runner

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestExecRun(t *testing.T) {
	tests := []struct {
		name       string
		cmd        Cmd
		wantOut    string
		wantCode   int
		wantStderr string
		wantIs     error
	}{
		{name: "ok", cmd: Cmd{Name: "sh", Args: []string{"-c", "echo hi"}}, wantOut: "hi\n"},
		{name: "stdin", cmd: Cmd{Name: "cat", Stdin: strings.NewReader("abc")}, wantOut: "abc"},
		{name: "exit code", cmd: Cmd{Name: "sh", Args: []string{"-c", "echo oops >&2; exit 3"}}, wantCode: 3, wantStderr: "oops"},
		{name: "missing binary", cmd: Cmd{Name: "schedmate-no-such-binary"}, wantCode: -1, wantIs: exec.ErrNotFound},
		{name: "missing path", cmd: Cmd{Name: "/nonexistent/bin/x"}, wantCode: -1, wantIs: ErrNotFound},
		{name: "timeout", cmd: Cmd{Name: "sleep", Args: []string{"30"}, Timeout: 100 * time.Millisecond}, wantCode: -1, wantIs: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Exec{}.Run(context.Background(), tt.cmd)
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if string(res.Stdout) != tt.wantOut {
					t.Errorf("stdout = %q, want %q", res.Stdout, tt.wantOut)
				}
				return
			}
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if rerr.ExitCode != tt.wantCode {
				t.Errorf("ExitCode = %d, want %d", rerr.ExitCode, tt.wantCode)
			}
			if !strings.Contains(rerr.Stderr, tt.wantStderr) {
				t.Errorf("Stderr = %q, want %q", rerr.Stderr, tt.wantStderr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
			if rerr.Argv[0] != tt.cmd.Name {
				t.Errorf("Argv = %q", rerr.Argv)
			}
		})
	}
}

// A child that keeps the output pipe open must not keep Run waiting after
// the timeout: the whole process group is killed.
func TestExecKillsProcessGroup(t *testing.T) {
	start := time.Now()
	_, err := Exec{}.Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", "sleep 30 & sleep 30; wait"}, Timeout: 200 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run returned after %v; the child group was not killed", d)
	}
}

func TestStderrBounded(t *testing.T) {
	_, err := Exec{}.Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", "head -c 100000 /dev/zero | tr '\\0' x >&2; exit 1"}})
	var rerr *Error
	if !errors.As(err, &rerr) {
		t.Fatalf("err = %v", err)
	}
	if len(rerr.Stderr) > MaxStderr {
		t.Errorf("len(Stderr) = %d, want <= %d", len(rerr.Stderr), MaxStderr)
	}
}
