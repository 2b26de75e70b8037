package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/serviceconnect/management"
	"github.com/spf13/cobra"
)

// getOpts are the flags of a get command.
type getOpts struct {
	Output string
}

func newUsersGetCmd(f *Factory) *cobra.Command {
	return newGetCmd(f, "user", "USER_ID", "Show a User: its fields, consents, custom settings and associated Things",
		func(ctx context.Context, c *management.Client, id string) (*management.UserDetails, error) {
			return c.Users.Get(ctx, id)
		}, userDetailsColumns, viewUser)
}

func newThingsGetCmd(f *Factory) *cobra.Command {
	return newGetCmd(f, "thing", "PHYSICAL_ID", "Show a Thing: its fields, statuses, custom settings and associated Users",
		func(ctx context.Context, c *management.Client, id string) (*management.ThingDetails, error) {
			return c.Things.Get(ctx, id)
		}, thingDetailsColumns, viewThing)
}

// newGetCmd returns the get command of one kind of item: noun names it
// in messages ("user u-x not found").
func newGetCmd[T any](f *Factory, noun, arg, short string, get func(context.Context, *management.Client, string) (*T, error), cols []column[T], view func(io.Writer, *T) error) *cobra.Command {
	opts := &getOpts{}
	cmd := &cobra.Command{
		Use:   "get " + arg,
		Short: short,
		Args:  exactArgs(arg),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			out, client, err := f.prepare(opts.Output)
			if err != nil {
				return err
			}
			item, err := get(cmd.Context(), client, args[0])
			if err != nil {
				return notFound(noun, args[0], err)
			}
			return printOne(f.IO.Out, out, item, cols, view)
		}),
	}
	addOutputFlag(cmd, &opts.Output, allFormats...)
	return cmd
}

// notFound turns the service's 404 for a User or Thing into a short
// message: "management: user u-x not found". Other errors are kept.
func notFound(noun, id string, err error) error {
	if errors.Is(err, management.ErrNotFound) {
		return notFoundError{fmt.Sprintf("%s %s not found", noun, printable(id)), err}
	}
	return err
}

// notFoundSaid turns a 404 into the service's own message, which names
// what was not found ("Thing lamp-7 was not found"). Other errors are kept.
func notFoundSaid(err error) error {
	var apiErr *management.APIError
	if errors.Is(err, management.ErrNotFound) && errors.As(err, &apiErr) && apiErr.Message != "" {
		return notFoundError{strings.ReplaceAll(apiErr.Message, "\n", " "), err}
	}
	return err
}

// notFoundError is a 404 told in a few words; it still matches
// management.ErrNotFound and the *management.APIError.
type notFoundError struct {
	msg string
	err error
}

// Error is the error text.
func (e notFoundError) Error() string { return prefix + e.msg }

// Unwrap returns the wrapped error.
func (e notFoundError) Unwrap() error { return e.err }

// printable is id as a message shows it: as it is, or quoted when it holds
// spaces or control characters, so that a message stays one unambiguous line.
func printable(id string) string {
	if q := strconv.Quote(id); q[1:len(q)-1] != id || strings.ContainsAny(id, " \t") {
		return q
	}
	return id
}
