package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/errtext"
	"github.com/spf13/cobra"
)

// GetOptions are the flags and argument of users get and things get, and
// what getRun needs besides: NewCmdGet fills them from the command line,
// tests fill them directly.
type GetOptions[T any] struct {
	IO     *IOStreams
	Client func() (*management.Client, error)
	Kind   getKind[T]

	ID     string
	Output string
}

// getKind is what a get command knows of the item it shows.
type getKind[T any] struct {
	noun  string // "user": in messages ("user u-x not found")
	arg   string // "USER_ID": in the usage line
	short string
	get   func(context.Context, *management.Client, string) (*T, error)
	cols  []column[T]
	view  func(io.Writer, *T) error
}

var userGet = getKind[management.UserDetails]{
	noun: "user", arg: "USER_ID", short: "Show a User: its fields, consents, custom settings and associated Things",
	get: func(ctx context.Context, c *management.Client, id string) (*management.UserDetails, error) {
		return c.Users.Get(ctx, id)
	},
	cols: userDetailsColumns, view: viewUser,
}

var thingGet = getKind[management.ThingDetails]{
	noun: "thing", arg: "PHYSICAL_ID", short: "Show a Thing: its fields, statuses, custom settings and associated Users",
	get: func(ctx context.Context, c *management.Client, id string) (*management.ThingDetails, error) {
		return c.Things.Get(ctx, id)
	},
	cols: thingDetailsColumns, view: viewThing,
}

// NewCmdGet returns the get command of one kind of item. runF, when not
// nil, is called with the options in place of getRun.
func NewCmdGet[T any](f *Factory, kind getKind[T], runF func(*GetOptions[T]) error) *cobra.Command {
	opts := &GetOptions[T]{IO: f.IO, Client: f.Client, Kind: kind}
	cmd := &cobra.Command{
		Use:   "get " + kind.arg,
		Short: kind.short,
		Args:  exactArgs(kind.arg),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return getRun(cmd.Context(), opts)
		}),
	}
	addOutputFlag(cmd, &opts.Output, allFormats...)
	addJQFlag(cmd, f.IO, &opts.Output)
	return cmd
}

func getRun[T any](ctx context.Context, opts *GetOptions[T]) error {
	out, client, err := prepare(opts.IO, opts.Client, opts.Output)
	if err != nil {
		return err
	}
	item, err := opts.Kind.get(ctx, client, opts.ID)
	if err != nil {
		return notFound(opts.Kind.noun, opts.ID, err)
	}
	return printOne(opts.IO.OutFor(out), out, item, opts.Kind.cols, opts.Kind.view)
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

// Error keeps the answer's request id when it had one: the short message
// must not lose what support needs.
func (e notFoundError) Error() string {
	var apiErr *management.APIError
	if errors.As(e.err, &apiErr) && apiErr.RequestID != "" {
		return errtext.Prefix + e.msg + " (request id " + apiErr.RequestID + ")"
	}
	return errtext.Prefix + e.msg
}

// Unwrap keeps management.ErrNotFound and the *APIError reachable.
func (e notFoundError) Unwrap() error { return e.err }

// printable is id as a message shows it: as it is, or quoted when it holds
// spaces or control characters, so that a message stays one unambiguous line.
func printable(id string) string {
	if q := strconv.Quote(id); q[1:len(q)-1] != id || strings.ContainsAny(id, " \t") {
		return q
	}
	return id
}
