// Package runner runs external commands with a per-call timeout and reports
// failures as *Error values that carry argv, exit code and bounded stderr.
package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// MaxStderr bounds how many bytes of stderr an *Error keeps.
const MaxStderr = 4096

// MaxOutput bounds how many bytes of stdout or stderr a Result keeps.
const MaxOutput = 64 << 20

// ErrNotFound reports that the command's binary could not be found.
var ErrNotFound = exec.ErrNotFound

// Cmd describes one command to run.
type Cmd struct {
	// Name is the binary, looked up on PATH unless it contains a slash.
	Name string
	// Args are the arguments after Name.
	Args []string
	// Stdin, when set, is fed to the command.
	Stdin io.Reader
	// Timeout bounds the run; zero means only the context bounds it.
	Timeout time.Duration
	// Env, when set, is appended to the current environment.
	Env []string
}

// Argv returns Name followed by Args.
func (c Cmd) Argv() []string {
	return append([]string{c.Name}, c.Args...)
}

// Result is the captured output of a command.
type Result struct {
	Stdout []byte
	Stderr []byte
}

// Runner runs external commands.
type Runner interface {
	// Run runs c and returns its output; a non-zero exit, a timeout or a
	// missing binary is returned as an *Error.
	Run(ctx context.Context, c Cmd) (Result, error)
}

// Error describes a failed command.
type Error struct {
	// Argv is the command line that failed.
	Argv []string
	// ExitCode is the exit status, or -1 when the command did not exit normally.
	ExitCode int
	// Stderr is the start of the command's stderr, at most MaxStderr bytes.
	Stderr string
	// Err is the underlying cause (an *exec.ExitError, exec.ErrNotFound,
	// context.DeadlineExceeded or context.Canceled).
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(strings.Join(e.Argv, " "))
	switch {
	case errors.Is(e.Err, context.DeadlineExceeded):
		b.WriteString(": timed out")
	case errors.Is(e.Err, context.Canceled):
		b.WriteString(": canceled")
	case errors.Is(e.Err, exec.ErrNotFound):
		b.WriteString(": command not found")
	case e.ExitCode >= 0:
		fmt.Fprintf(&b, ": exit status %d", e.ExitCode)
	default:
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Exec runs commands as real processes. Each command gets its own process
// group, and the whole group is killed when the timeout or context expires.
type Exec struct {
	// WaitDelay bounds how long Run waits for output pipes after the process
	// is killed; zero means one second.
	WaitDelay time.Duration
}

// Run implements Runner.
func (x Exec) Run(ctx context.Context, c Cmd) (Result, error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Stdin = c.Stdin
	if len(c.Env) > 0 {
		cmd.Env = append(cmd.Environ(), c.Env...)
	}
	var stdout, stderr boundedBuffer
	stdout.limit, stderr.limit = MaxOutput, MaxOutput
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Kill the whole group so children of the command do not linger.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = x.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = time.Second
	}
	err := cmd.Run()
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if err == nil {
		return res, nil
	}
	rerr := &Error{Argv: c.Argv(), ExitCode: -1, Stderr: boundString(res.Stderr, MaxStderr), Err: err}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		rerr.Err = ctx.Err()
	case errors.As(err, &exitErr):
		rerr.ExitCode = exitErr.ExitCode()
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, syscall.ENOENT):
		rerr.Err = fmt.Errorf("%w: %w", exec.ErrNotFound, err)
	}
	return res, rerr
}

func boundString(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// boundedBuffer keeps at most limit bytes and silently drops the rest, so a
// chatty command cannot exhaust memory.
type boundedBuffer struct {
	bytes.Buffer
	limit int
}

// Write implements io.Writer.
func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}
