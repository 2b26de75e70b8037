//go:build unix

package main

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/serviceconnect/management/managementtest"
)

// TestExportProgressOnTerminal: with standard error a terminal (a
// pseudo-terminal here), an export draws its progress bar there: the
// count, the rate and the elapsed time, redrawn in place.
func TestExportProgressOnTerminal(t *testing.T) {
	bin := buildTool(t)
	srv := managementtest.NewServer()
	defer srv.Close()
	seed(srv, 3000)
	// Slow pages, so that the bar is drawn a few times before the end.
	srv.DelayNext(managementtest.RouteListUsers, 10, 60*time.Millisecond)

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	// A terminal has a size: the bar library draws nothing in 0 rows.
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "users", "export", "--out", filepath.Join(t.TempDir(), "u.jsonl"))
	cmd.Env = setEnv(toolEnv(srv), "TERM=xterm-256color") // not dumb, whatever the test's terminal
	cmd.Stderr = tty
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
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, screen.String())
	}
	<-read
	got := screen.String()
	for _, want := range []string{"Exporting", "3000 Users", "/s", "\x1b[", "Exported 3000 Users to "} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal shows no %q:\n%q", want, got)
		}
	}
	if strings.Count(got, "Exporting") < 2 {
		t.Errorf("the bar was drawn once, not updated:\n%q", got)
	}
}
