//go:build unix

package main

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"testing"

	"github.com/creack/pty"
)

// ptyRun is what a run of the tool showed on a terminal.
type ptyRun struct {
	screen string // everything written to the terminal, escapes included
	code   int
}

// runPTY runs the tool with its standard output and error on a
// pseudo-terminal cols columns wide, as an operator's shell runs it, and
// returns what the terminal received.
func runPTY(t *testing.T, bin string, env []string, cols uint16, args ...string) ptyRun {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	// A terminal has a size: the bar library draws nothing in 0 rows.
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: cols}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the child has its own; the reader sees EOF (EIO) when it exits
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		io.Copy(&screen, ptmx) // ends with EIO once the child is gone
		close(read)
	}()
	err = cmd.Wait()
	<-read
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return ptyRun{screen.String(), code}
}
