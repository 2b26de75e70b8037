// Command management is the command-line tool for the operators of the
// Device and User Management service: it lists, reads, exports and
// updates Users and Things, and checks End User access tokens, with the
// Go SDK github.com/serviceconnect/management. Run it with --help, or
// from the repository's root:
//
//	go run -C cmd/management . --fake users list
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/serviceconnect/management/cmd/management/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:], cli.System()))
}

// run runs the tool and returns its exit code. The first Ctrl-C (or
// SIGTERM) cancels the command, which stops cleanly (an export can then
// resume); a second one ends the process at once.
func run(args []string, streams *cli.IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	return cli.Run(ctx, args, cli.NewFactory(streams))
}
