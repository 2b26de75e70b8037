package cli

import (
	"bytes"
	"io"
	"os"

	"github.com/vbauerster/cupwriter"
)

// IOStreams are the standard streams of one run of the tool, and whether
// standard output and standard error are terminals: tables and progress
// bars are for people, JSON lines and silence for pipes.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdoutTTY bool
	stderrTTY bool
	// dumbTerminal: TERM=dumb, a terminal that cannot move its cursor
	// (Emacs' shell, some CI consoles): it shows no progress bar.
	dumbTerminal bool
	// noProgress is --no-progress.
	noProgress bool
}

// CanShowProgress reports whether a progress bar may be drawn on standard
// error: a terminal that can move its cursor, and no --no-progress.
func (s *IOStreams) CanShowProgress() bool {
	return s.stderrTTY && !s.dumbTerminal && !s.noProgress
}

// SetDumbTerminal makes the streams say whether TERM is dumb.
func (s *IOStreams) SetDumbTerminal(dumb bool) { s.dumbTerminal = dumb }

// System returns the process's standard streams.
func System() *IOStreams {
	return &IOStreams{
		In:        os.Stdin,
		Out:       os.Stdout,
		ErrOut:    os.Stderr,
		stdoutTTY: isTerminal(os.Stdout),
		stderrTTY: isTerminal(os.Stderr),

		dumbTerminal: os.Getenv("TERM") == "dumb",
	}
}

// Test returns streams backed by buffers, neither of them a terminal, and
// the buffers: standard input, output and error.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := new(bytes.Buffer), new(bytes.Buffer), new(bytes.Buffer)
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// IsStdoutTTY reports whether standard output is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether standard error is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetStdoutTTY makes the streams say whether standard output is a terminal.
func (s *IOStreams) SetStdoutTTY(tty bool) { s.stdoutTTY = tty }

// SetStderrTTY makes the streams say whether standard error is a terminal.
func (s *IOStreams) SetStderrTTY(tty bool) { s.stderrTTY = tty }

// isTerminal reports whether f is a terminal. The progress bar's library
// already asks the operating system (on every platform it supports), so
// its answer is reused rather than a second dependency added for it.
func isTerminal(f *os.File) bool {
	return cupwriter.New(f, false).IsTerminal()
}
