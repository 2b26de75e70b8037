// Package cli holds the commands of the management tool, in the manner of
// the GitHub CLI: a Factory that builds the SDK client on first use, IO
// streams that know whether they are terminals, and per command one shape:
// an options struct (XOptions) that the flags fill, or a test; NewCmdX,
// which builds the cobra command and takes a run function that replaces
// the command's own in tests (nil otherwise); and xRun, which does the
// work from the options alone. Run runs a command line and returns the
// exit code.
package cli

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/serviceconnect/management"
	"github.com/spf13/cobra"
)

// Run runs the tool with the command-line arguments args (without the
// program's name) and returns its exit code: ExitOK, ExitFailure,
// ExitUsage, ExitAuth or ExitInterrupt. Errors are printed on f.IO.ErrOut,
// one line each, for operators: naming environment variables and flags,
// never a Config field.
func Run(ctx context.Context, args []string, f *Factory) int {
	root := NewRootCmd(f)
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if ctx.Err() != nil { // Ctrl-C or SIGTERM: main cancels ctx
		fmt.Fprintln(f.IO.ErrOut, escapeControls(interruptedMessage(err)))
		return ExitInterrupt
	}
	fmt.Fprintln(f.IO.ErrOut, operatorMessage(err, f.configFlags()))
	code := exitCode(err)
	if code == ExitUsage && wantsHelp(err) {
		fmt.Fprintf(f.IO.ErrOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

const rootLong = `management lists, reads, exports and updates the Users and Things of the
Device and User Management service, and checks End User access tokens.

Configuration comes from the environment, as for the Go SDK:

  ` + management.EnvBaseURL + `       the service's address, https://host[:port][/path]
  ` + management.EnvClientID + `      the client application's id
  ` + management.EnvClientSecret + `  its secret (never given as an argument)
  ` + management.EnvMaxRetries + `, ` + management.EnvRetryWaitMin + `, ` + management.EnvRetryWaitMax + `,
  ` + management.EnvPathPrefix + `, ` + management.EnvUnsetMarker + `, ... (see the SDK)

--base-url and --client-id override the variables of the same name.
--fake runs every command against a built-in fake service, offline;
fake serve serves that fake over HTTP, for the tests of apps in any language.

Output is a table on a terminal and JSON lines otherwise; choose with
--output table|json|jsonl|csv, and filter JSON with --jq EXPR. Tables show
control characters from the data escaped, as Go's %q does; the other
formats keep the data exact.

` + exitCodesHelp

// NewRootCmd returns the tool's root command, its flags bound to f.
func NewRootCmd(f *Factory) *cobra.Command {
	root := group(&cobra.Command{
		Use:           "management <command> <subcommand> [flags]",
		Short:         "Manage the Users and Things of the Device and User Management service",
		Long:          rootLong,
		SilenceErrors: true,
		SilenceUsage:  true,
		Example: `  management --fake users list
  management users get u-123 -o json
  management users export --out users.jsonl --checkpoint users.ckpt
  management things update thermo-42 --name "Hall thermostat" --unset eco
  MANAGEMENT_END_USER_TOKEN="Bearer ..." management token check
  management fake serve --listen 127.0.0.1:0`,
	})
	// --version prints what the version command prints, as gh's does.
	root.Version = versionText(debug.ReadBuildInfo())
	root.SetVersionTemplate("{{.Version}}")
	root.Flags().Bool("version", false, "print the tool's version, as the version command does")
	pf := root.PersistentFlags()
	pf.StringVar(&f.baseURL, "base-url", "", "the service's base URL (default $"+management.EnvBaseURL+")")
	pf.StringVar(&f.clientID, "client-id", "", "the client id (default $"+management.EnvClientID+")")
	pf.BoolVar(&f.secretStdin, "client-secret-stdin", false, "read the client secret from the first line of standard input (default $"+management.EnvClientSecret+")")
	pf.BoolVar(&f.fake, "fake", false, "run against a built-in fake service seeded with a few Users and Things (offline)")
	pf.BoolVar(&f.IO.noProgress, "no-progress", false, "draw no progress bar (none is drawn either when standard error is not a terminal, or TERM=dumb)")
	pf.BoolVar(&f.debug, "debug", false, "log the SDK's requests and retries to standard error (no secrets, tokens or query strings)")

	root.AddCommand(
		group(&cobra.Command{Use: "users <command>", Short: "List, read, export Users; associate Things with them"},
			NewCmdList(f, usersResource, nil),
			NewCmdGet(f, userGet, nil),
			NewCmdExport(f, usersResource, nil),
			NewCmdAssociate(f, nil),
			NewCmdDisassociate(f, nil),
		),
		group(&cobra.Command{Use: "things <command>", Short: "List, read, update and export Things"},
			NewCmdList(f, thingsResource, nil),
			NewCmdGet(f, thingGet, nil),
			NewCmdUpdate(f, nil),
			NewCmdExport(f, thingsResource, nil),
		),
		group(&cobra.Command{Use: "token <command>", Short: "Check End User access tokens"},
			NewCmdTokenCheck(f, nil),
		),
		group(&cobra.Command{Use: "fake <command>", Short: "Run the fake service for tests in any language"},
			NewCmdFakeServe(f, nil),
		),
		NewCmdVersion(f, nil),
	)
	return root
}

// group makes cmd a command that only holds subcommands: alone it prints
// its help, and an unknown subcommand is a usage error (cobra would print
// the help and succeed).
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf(" (did you mean %q?)", s[0])
		}
		return usagef("%s", msg)
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	cmd.SuggestionsMinimumDistance = 2
	cmd.AddCommand(subs...)
	return cmd
}

// runE adapts a command's function: its error gets its exit code.
func runE(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := fn(cmd, args); err != nil {
			return classify(err)
		}
		return nil
	}
}

// exactArgs requires n arguments, named in the message when they are not all there.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
			if len(names) == 0 {
				return usagef("%s takes no arguments; got %q", path, args[0])
			}
			return usagef("%s takes %d argument(s), %s; got %d", path, len(names), strings.Join(names, " "), len(args))
		}
		for i, a := range args {
			if strings.TrimSpace(a) == "" {
				return usagef("%s is empty", names[i])
			}
		}
		return nil
	}
}
