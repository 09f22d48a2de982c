// Package exitcode defines schedmate's process exit codes in one place, and
// an error type that carries one.
package exitcode

import (
	"errors"
	"fmt"
	"strings"
)

// Code is a process exit status.
type Code int

// The exit codes schedmate uses. They are part of its interface: scripts
// rely on them, so they never change meaning.
const (
	OK          Code = 0 // success
	Error       Code = 1 // an unexpected error
	Usage       Code = 2 // bad flags, arguments or configuration
	NotFound    Code = 3 // a job, node, file or record does not exist
	Unavailable Code = 4 // Slurm, the LLM endpoint or the GPU is not reachable
	Locked      Code = 5 // the database is held by another process past the timeout
	DataErr     Code = 6 // input that cannot be used: binary, corrupt, truncated
	Timeout     Code = 7 // an external command or service did not answer in time
	CheckFailed Code = 8 // a health check ran and found a fault
)

// descriptions documents each code for `schedmate help exit-codes`.
var descriptions = []struct {
	code Code
	name string
	text string
}{
	{OK, "ok", "success"},
	{Error, "error", "an unexpected error"},
	{Usage, "usage", "bad flags, arguments or configuration"},
	{NotFound, "not-found", "a job, node, file or record does not exist"},
	{Unavailable, "unavailable", "Slurm, the LLM endpoint or the GPU is not reachable"},
	{Locked, "locked", "the database is held by another process past the lock timeout"},
	{DataErr, "data", "input that cannot be used: binary, corrupt or truncated"},
	{Timeout, "timeout", "an external command or service did not answer in time"},
	{CheckFailed, "check-failed", "a health check ran and found a fault"},
}

// Describe returns a table of every exit code with its meaning.
func Describe() string {
	var b strings.Builder
	b.WriteString("schedmate exit codes:\n\n")
	for _, d := range descriptions {
		fmt.Fprintf(&b, "  %d  %-12s %s\n", d.code, d.name, d.text)
	}
	b.WriteString("\nHooks (`schedmate hook submit`, `schedmate hook epilog`) always exit 0 so that\nSlurm is never blocked by schedmate; they report problems on stderr.\n")
	return b.String()
}

// Err is an error that carries the exit code the process should end with.
type Err struct {
	Code Code
	Err  error
}

// Error returns the wrapped error's message.
func (e *Err) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *Err) Unwrap() error { return e.Err }

// New wraps err so that the process exits with code. A nil err stays nil.
func New(code Code, err error) error {
	if err == nil {
		return nil
	}
	return &Err{Code: code, Err: err}
}

// Errorf formats an error that carries code.
func Errorf(code Code, format string, args ...any) error {
	return &Err{Code: code, Err: fmt.Errorf(format, args...)}
}

// Of returns the exit code an error maps to: the code of the outermost *Err
// in its chain, Error for any other non-nil error, OK for nil.
func Of(err error) Code {
	if err == nil {
		return OK
	}
	var e *Err
	if errors.As(err, &e) {
		return e.Code
	}
	return Error
}
