package cli

import (
	"context"
	"testing"
)

// TestInterruptedCommand: a command stopped by Ctrl-C (its context
// cancelled) exits 130 and says how to go on, whatever the command.
func TestInterruptedCommand(t *testing.T) {
	clearEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, args := range [][]string{
		{"--fake", "users", "get", "u-ada"},
		{"--fake", "things", "update", "thermo-42", "--name", "x"},
	} {
		r := env{ctx: ctx}.run(t, args...)
		if want := "management: interrupted: run the same command again to start over\n"; r.code != ExitInterrupt || r.stderr != want {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", args, r.code, r.stderr, ExitInterrupt, want)
		}
	}
}
