// Package iostreams bundles the standard streams with what commands need to
// know about them: whether they are terminals, whether colour is wanted and
// how wide the screen is. Data goes to Out, messages to ErrOut.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"golang.org/x/term"
)

// IOStreams are the streams a command reads and writes.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY, stdoutTTY, stderrTTY bool
	noColor                        bool
	width                          int
}

// System returns the process's own streams, detecting terminals and honouring
// NO_COLOR and TERM=dumb.
func System() *IOStreams {
	s := &IOStreams{
		In:        os.Stdin,
		Out:       os.Stdout,
		ErrOut:    os.Stderr,
		stdinTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		stdoutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		stderrTTY: term.IsTerminal(int(os.Stderr.Fd())),
		noColor:   os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb",
	}
	if s.stdoutTTY {
		if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			s.width = w
		}
	}
	return s
}

// Test returns streams over in-memory buffers, none of them a terminal.
func Test() (s *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// SetTerminal marks the streams as terminals (or not); tests use it to
// exercise terminal-only output.
func (s *IOStreams) SetTerminal(stdin, stdout, stderr bool) {
	s.stdinTTY, s.stdoutTTY, s.stderrTTY = stdin, stdout, stderr
}

// DisableColor turns colour off whatever the terminal supports (--no-color).
func (s *IOStreams) DisableColor() { s.noColor = true }

// IsStdinTTY reports whether standard input is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether standard output is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether standard error is a terminal; progress bars
// are drawn only then.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// ColorEnabled reports whether output to Out may use colour: only on a
// terminal, and never with NO_COLOR, TERM=dumb or --no-color.
func (s *IOStreams) ColorEnabled() bool { return s.stdoutTTY && !s.noColor }

// TerminalWidth returns the width of the terminal on Out, or 80.
func (s *IOStreams) TerminalWidth() int {
	if s.width > 0 {
		return s.width
	}
	return 80
}

// Renderer returns a lipgloss renderer for Out that emits colour only when
// ColorEnabled.
func (s *IOStreams) Renderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(s.Out)
	if s.ColorEnabled() {
		r.SetColorProfile(termenv.ANSI256)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	return r
}
