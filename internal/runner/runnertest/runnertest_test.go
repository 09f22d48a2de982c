package runnertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/schedmate/schedmate/internal/runner"
)

func TestStubAnswersInOrder(t *testing.T) {
	s := New(t)
	s.Expect("squeue", "-h").Stdout("1\n")
	s.ExpectPrefix("scontrol", "show").Fail(1, "Invalid job id specified")
	s.Expect("sleep").Hang()

	res, err := s.Run(context.Background(), runner.Cmd{Name: "squeue", Args: []string{"-h"}})
	if err != nil || string(res.Stdout) != "1\n" {
		t.Fatalf("squeue: %q, %v", res.Stdout, err)
	}
	_, err = s.Run(context.Background(), runner.Cmd{Name: "scontrol", Args: []string{"show", "job", "9"}})
	var rerr *runner.Error
	if !errors.As(err, &rerr) || rerr.ExitCode != 1 || rerr.Stderr != "Invalid job id specified" {
		t.Fatalf("scontrol: %v", err)
	}
	_, err = s.Run(context.Background(), runner.Cmd{Name: "sleep", Timeout: 10 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sleep: %v", err)
	}
}

func TestStubFailsOnUnexpectedAndUnused(t *testing.T) {
	for _, tt := range []struct {
		name string
		run  func(s *Stub)
	}{
		{"unexpected", func(s *Stub) { _, _ = s.Run(context.Background(), runner.Cmd{Name: "x"}) }},
		{"mismatch", func(s *Stub) {
			s.Expect("a", "b")
			_, _ = s.Run(context.Background(), runner.Cmd{Name: "a", Args: []string{"c"}})
		}},
		{"unused", func(s *Stub) { s.Expect("never") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ft := &fakeT{}
			func() {
				defer ft.cleanup()
				tt.run(New(ft))
			}()
			if !ft.failed {
				t.Error("stub did not fail the test")
			}
		})
	}
}

// fakeT records failures instead of failing the real test.
type fakeT struct {
	testing.TB
	failed   bool
	cleanups []func()
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Cleanup(fn func())     { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}
