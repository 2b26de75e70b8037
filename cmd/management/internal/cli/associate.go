package cli

import (
	"fmt"

	"github.com/serviceconnect/management"
	"github.com/spf13/cobra"
)

// associateOpts are the flags of users associate.
type associateOpts struct {
	Model           string
	FirmwareVersion string
	Output          string
}

func newAssociateCmd(f *Factory) *cobra.Command {
	opts := &associateOpts{}
	cmd := &cobra.Command{
		Use:   "associate USER_ID PHYSICAL_ID --model MODEL --firmware-version VERSION",
		Short: "Associate a Thing with a User, creating the Thing if it is new, and show it",
		Args:  exactArgs("USER_ID", "PHYSICAL_ID"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if opts.Model == "" || opts.FirmwareVersion == "" {
				return usagef("--model and --firmware-version are required")
			}
			out, client, err := f.prepare(opts.Output)
			if err != nil {
				return err
			}
			thing, created, err := client.Users.AssociateThing(cmd.Context(), args[0], management.NewAssociation{
				PhysicalID: args[1], Model: opts.Model, FirmwareVersion: opts.FirmwareVersion,
			})
			if err != nil {
				return notFound("user", args[0], err)
			}
			if f.IO.IsStderrTTY() {
				what := "an existing Thing"
				if created {
					what = "a new Thing"
				}
				fmt.Fprintf(f.IO.ErrOut, "Associated %s (%s) with %s\n", printable(args[1]), what, printable(args[0]))
			}
			return printOne(f.IO.Out, out, thing, thingDetailsColumns, viewThing)
		}),
	}
	cmd.Flags().StringVar(&opts.Model, "model", "", "the Thing's model (required)")
	cmd.Flags().StringVar(&opts.FirmwareVersion, "firmware-version", "", "the Thing's firmware version (required)")
	addOutputFlag(cmd, &opts.Output, allFormats...)
	return cmd
}

func newDisassociateCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "disassociate USER_ID PHYSICAL_ID",
		Short: "Disassociate a Thing from a User",
		Args:  exactArgs("USER_ID", "PHYSICAL_ID"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			client, err := f.Client()
			if err != nil {
				return err
			}
			if err := client.Users.DisassociateThing(cmd.Context(), args[0], args[1]); err != nil {
				return notFoundSaid(err)
			}
			if f.IO.IsStderrTTY() {
				fmt.Fprintf(f.IO.ErrOut, "Disassociated %s from %s\n", printable(args[1]), printable(args[0]))
			}
			return nil
		}),
	}
}
