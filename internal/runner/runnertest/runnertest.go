// Package runnertest provides a scripted runner.Runner for tests: calls must
// match the registered expectations in order, and the test fails on any
// unexpected or unused call.
package runnertest

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/schedmate/schedmate/internal/runner"
)

// Stub is a runner.Runner that answers from expectations registered with Expect.
type Stub struct {
	t     testing.TB
	mu    sync.Mutex
	calls []*Call
	next  int
}

// Call is one expected command and its scripted answer.
type Call struct {
	argv    []string
	prefix  bool
	stdout  string
	stderr  string
	err     error
	exit    int
	stdinFn func(string)
	hang    bool
}

// New returns a Stub bound to t; at cleanup it fails t if any expectation was not used.
func New(t testing.TB) *Stub {
	t.Helper()
	s := &Stub{t: t}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.calls[s.next:] {
			t.Errorf("runnertest: expected call not made: %s", strings.Join(c.argv, " "))
		}
	})
	return s
}

// Expect registers the next expected command line (name followed by args).
func (s *Stub) Expect(argv ...string) *Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Call{argv: argv}
	s.calls = append(s.calls, c)
	return c
}

// ExpectPrefix registers the next expected command by the leading words of
// its command line only.
func (s *Stub) ExpectPrefix(argv ...string) *Call {
	c := s.Expect(argv...)
	c.prefix = true
	return c
}

// Stdout sets the command's stdout.
func (c *Call) Stdout(out string) *Call { c.stdout = out; return c }

// Fail makes the command exit with code and stderr.
func (c *Call) Fail(code int, stderr string) *Call { c.exit, c.stderr = code, stderr; return c }

// Err makes the command fail with err as the *runner.Error cause.
func (c *Call) Err(err error) *Call { c.err = err; return c }

// Hang makes the command block until its context ends.
func (c *Call) Hang() *Call { c.hang = true; return c }

// Stdin passes the command's stdin to fn.
func (c *Call) Stdin(fn func(stdin string)) *Call { c.stdinFn = fn; return c }

// Run implements runner.Runner.
func (s *Stub) Run(ctx context.Context, cmd runner.Cmd) (runner.Result, error) {
	s.t.Helper()
	argv := cmd.Argv()
	s.mu.Lock()
	if s.next >= len(s.calls) {
		s.mu.Unlock()
		s.t.Errorf("runnertest: unexpected call: %s", strings.Join(argv, " "))
		return runner.Result{}, &runner.Error{Argv: argv, ExitCode: -1, Err: fmt.Errorf("runnertest: unexpected call")}
	}
	c := s.calls[s.next]
	if !c.matches(argv) {
		s.mu.Unlock()
		s.t.Errorf("runnertest: call %d:\n got  %q\n want %q", s.next, argv, c.argv)
		return runner.Result{}, &runner.Error{Argv: argv, ExitCode: -1, Err: fmt.Errorf("runnertest: mismatched call")}
	}
	s.next++
	s.mu.Unlock()

	if c.stdinFn != nil {
		var in []byte
		if cmd.Stdin != nil {
			in, _ = io.ReadAll(cmd.Stdin)
		}
		c.stdinFn(string(in))
	}
	if c.hang {
		if cmd.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, cmd.Timeout)
			defer cancel()
		}
		<-ctx.Done()
		return runner.Result{}, &runner.Error{Argv: argv, ExitCode: -1, Err: ctx.Err()}
	}
	res := runner.Result{Stdout: []byte(c.stdout), Stderr: []byte(c.stderr)}
	switch {
	case c.err != nil:
		return res, &runner.Error{Argv: argv, ExitCode: -1, Stderr: c.stderr, Err: c.err}
	case c.exit != 0:
		return res, &runner.Error{Argv: argv, ExitCode: c.exit, Stderr: c.stderr, Err: fmt.Errorf("exit status %d", c.exit)}
	}
	return res, nil
}

func (c *Call) matches(argv []string) bool {
	if len(argv) < len(c.argv) || (!c.prefix && len(argv) != len(c.argv)) {
		return false
	}
	for i := range c.argv {
		if argv[i] != c.argv[i] {
			return false
		}
	}
	return true
}
