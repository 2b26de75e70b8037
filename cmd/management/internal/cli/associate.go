package cli

import (
	"context"
	"fmt"

	"github.com/serviceconnect/management"
	"github.com/spf13/cobra"
)

// AssociateOptions are the flags and arguments of users associate, and
// what associateRun needs besides: NewCmdAssociate fills them from the
// command line, tests fill them directly.
type AssociateOptions struct {
	IO     *IOStreams
	Client func() (*management.Client, error)

	UserID          string
	PhysicalID      string
	Model           string
	FirmwareVersion string
	Output          string
}

// NewCmdAssociate returns users associate. runF, when not nil, is called
// with the options in place of associateRun.
func NewCmdAssociate(f *Factory, runF func(*AssociateOptions) error) *cobra.Command {
	opts := &AssociateOptions{IO: f.IO, Client: f.Client}
	cmd := &cobra.Command{
		Use:   "associate USER_ID PHYSICAL_ID --model MODEL --firmware-version VERSION",
		Short: "Associate a Thing with a User, creating the Thing if it is new, and show it",
		Args:  exactArgs("USER_ID", "PHYSICAL_ID"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			opts.UserID, opts.PhysicalID = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return associateRun(cmd.Context(), opts)
		}),
	}
	cmd.Flags().StringVar(&opts.Model, "model", "", "the Thing's model (required)")
	cmd.Flags().StringVar(&opts.FirmwareVersion, "firmware-version", "", "the Thing's firmware version (required)")
	addOutputFlag(cmd, &opts.Output, allFormats...)
	addJQFlag(cmd, f.IO, &opts.Output)
	return cmd
}

func associateRun(ctx context.Context, opts *AssociateOptions) error {
	if opts.Model == "" || opts.FirmwareVersion == "" {
		return usagef("--model and --firmware-version are required")
	}
	out, client, err := prepare(opts.IO, opts.Client, opts.Output)
	if err != nil {
		return err
	}
	thing, created, err := client.Users.AssociateThing(ctx, opts.UserID, management.NewAssociation{
		PhysicalID: opts.PhysicalID, Model: opts.Model, FirmwareVersion: opts.FirmwareVersion,
	})
	if err != nil {
		return notFound("user", opts.UserID, err)
	}
	// On standard error, terminal or not: standard output holds the Thing,
	// which does not tell whether the service created it.
	what := "it already existed, and may have been associated already"
	if created {
		what = "a new Thing, created now"
	}
	fmt.Fprintf(opts.IO.ErrOut, "Associated Thing %s with User %s: %s\n", printable(opts.PhysicalID), printable(opts.UserID), what)
	return printOne(opts.IO.OutFor(out), out, thing, thingDetailsColumns, viewThing)
}

// DisassociateOptions are the arguments of users disassociate, and what
// disassociateRun needs besides.
type DisassociateOptions struct {
	IO     *IOStreams
	Client func() (*management.Client, error)

	UserID     string
	PhysicalID string
}

// NewCmdDisassociate returns users disassociate. runF, when not nil, is
// called with the options in place of disassociateRun.
func NewCmdDisassociate(f *Factory, runF func(*DisassociateOptions) error) *cobra.Command {
	opts := &DisassociateOptions{IO: f.IO, Client: f.Client}
	return &cobra.Command{
		Use:   "disassociate USER_ID PHYSICAL_ID",
		Short: "Disassociate a Thing from a User",
		Args:  exactArgs("USER_ID", "PHYSICAL_ID"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			opts.UserID, opts.PhysicalID = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return disassociateRun(cmd.Context(), opts)
		}),
	}
}

func disassociateRun(ctx context.Context, opts *DisassociateOptions) error {
	client, err := opts.Client()
	if err != nil {
		return err
	}
	if err := client.Users.DisassociateThing(ctx, opts.UserID, opts.PhysicalID); err != nil {
		return notFoundSaid(err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "Disassociated Thing %s from User %s\n", printable(opts.PhysicalID), printable(opts.UserID))
	return nil
}
