package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/errtext"
	"github.com/serviceconnect/management/internal/linkset"
	"github.com/spf13/cobra"
)

// resource is what the list and export commands need to know of Users or
// Things.
type resource[T any] struct {
	noun     string // "users": the command's name
	singular string // "User": in messages
	plural   string // "Users"
	cols     []column[T]
	pages    func(*management.Client) pageFunc[T]
}

// pageFunc fetches one page of a list: UsersService.ListPage or ThingsService.ListPage.
type pageFunc[T any] func(context.Context, *management.ListOptions) (*management.Page[*T], error)

var usersResource = resource[management.User]{
	noun: "users", singular: "User", plural: "Users", cols: userColumns,
	pages: func(c *management.Client) pageFunc[management.User] { return c.Users.ListPage },
}

var thingsResource = resource[management.Thing]{
	noun: "things", singular: "Thing", plural: "Things", cols: thingColumns,
	pages: func(c *management.Client) pageFunc[management.Thing] { return c.Things.ListPage },
}

// orderOptions are the ordering flags of list and export.
type orderOptions struct {
	OrderBy   string
	Direction string
	NextPage  string
}

func (o *orderOptions) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.OrderBy, "order-by", "", "order by createdAt (the default) or updatedAt")
	fl.StringVar(&o.Direction, "direction", "", "asc or desc (the default)")
	fl.StringVar(&o.NextPage, "next-page", "", "resume from a next-page link (it carries its own order)")
	_ = cmd.RegisterFlagCompletionFunc("order-by", cobra.FixedCompletions([]string{"createdAt", "updatedAt"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("direction", cobra.FixedCompletions([]string{"asc", "desc"}, cobra.ShellCompDirectiveNoFileComp))
}

// listOptions returns the SDK's options for the flags.
func (o *orderOptions) listOptions() (*management.ListOptions, error) {
	var lo management.ListOptions
	switch o.OrderBy {
	case "", "createdAt":
	case string(management.OrderByUpdatedAt):
		lo.OrderBy = management.OrderByUpdatedAt
	default:
		return nil, usagef("--order-by %q: want createdAt or updatedAt", o.OrderBy)
	}
	switch management.Direction(o.Direction) {
	case "", management.Ascending, management.Descending:
		lo.Direction = management.Direction(o.Direction)
	default:
		return nil, usagef("--direction %q: want asc or desc", o.Direction)
	}
	if o.NextPage != "" && (o.OrderBy != "" || o.Direction != "") {
		return nil, usagef("--next-page cannot be combined with --order-by or --direction: the link carries its own order")
	}
	lo.NextPage = o.NextPage
	return &lo, nil
}

// walk fetches the pages of a list one after the other, from opts, and
// hands each to page, until the last page, until page returns false, or
// until an error. On an error it also returns the link it was fetching
// ("" for a first page).
//
// While page works on a page (writes it, syncs it), the next one is
// already being fetched: the network and the disk overlap. However walk
// returns, that fetch is cancelled and waited for.
//
// A link already followed in this walk is refused, so that a service
// looping on its links cannot make the walk endless; walk remembers 8
// bytes per page for that (linkset.Set).
func walk[T any](ctx context.Context, list pageFunc[T], opts *management.ListOptions, page func(*management.Page[*T]) (more bool, err error)) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen := linkset.New() // the SDK's guard, shared with its List iterators
	cur := fetch(ctx, list, &management.ListOptions{OrderBy: opts.OrderBy, Direction: opts.Direction, NextPage: opts.NextPage})
	if opts.NextPage != "" {
		seen.Add(opts.NextPage)
	}
	for {
		r := <-cur
		if r.err != nil {
			return r.link, r.err
		}
		var next <-chan fetched[T]
		if link := r.page.NextPage; link != "" {
			if !seen.Add(link) {
				return link, errtext.Errorf("%w: the list links back to a page it already gave", management.ErrInvalidPageLink)
			}
			next = fetch(ctx, list, &management.ListOptions{NextPage: link})
		}
		more, err := page(r.page)
		if err != nil || !more || next == nil {
			if next != nil {
				cancel()
				<-next
			}
			return "", err
		}
		cur = next
	}
}

// fetched is a page, or the error fetching it from link.
type fetched[T any] struct {
	page *management.Page[*T]
	link string
	err  error
}

// fetch fetches a page in the background.
func fetch[T any](ctx context.Context, list pageFunc[T], opts *management.ListOptions) <-chan fetched[T] {
	ch := make(chan fetched[T], 1)
	go func() {
		p, err := list(ctx, opts)
		ch <- fetched[T]{p, opts.NextPage, err}
	}()
	return ch
}

// refusedLink reports whether err is the service (or the SDK) refusing a
// next-page link: a 400 on a link, or a link that is not a path of the
// service's.
func refusedLink(link string, err error) bool {
	return link != "" && (errors.Is(err, management.ErrValidation) || errors.Is(err, management.ErrInvalidPageLink))
}

// ListOptions are the flags of users list and things list, and what
// listRun needs besides: NewCmdList fills them from the command line,
// tests fill them directly.
type ListOptions[T any] struct {
	IO       *IOStreams
	Client   func() (*management.Client, error)
	Resource resource[T]

	Order  orderOptions
	Output string
	Pages  int
}

// NewCmdList returns the list command of res. runF, when not nil, is
// called with the options in place of listRun: tests use it to see what
// the command line sets.
func NewCmdList[T any](f *Factory, res resource[T], runF func(*ListOptions[T]) error) *cobra.Command {
	opts := &ListOptions[T]{IO: f.IO, Client: f.Client, Resource: res}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List " + res.plural,
		Long: "List " + res.plural + ", newest first unless --order-by and --direction say otherwise,\n" +
			"following the service's pages to the end, or for --pages pages; then the link\n" +
			"to resume from is printed on standard error, for --next-page.",
		Args: exactArgs(),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return listRun(cmd.Context(), opts)
		}),
	}
	addOutputFlag(cmd, &opts.Output, allFormats...)
	addJQFlag(cmd, f.IO, &opts.Output)
	opts.Order.addFlags(cmd)
	cmd.Flags().IntVar(&opts.Pages, "pages", 0, "fetch at most this many pages (0: all)")
	return cmd
}

func listRun[T any](ctx context.Context, opts *ListOptions[T]) error {
	res := opts.Resource
	lo, err := opts.Order.listOptions()
	if err != nil {
		return err
	}
	if opts.Pages < 0 {
		return usagef("--pages %d: want 0 (all) or more", opts.Pages)
	}
	out, client, err := prepare(opts.IO, opts.Client, opts.Output)
	if err != nil {
		return err
	}
	iw := newItemWriter(opts.IO.OutFor(out), out, res.cols, 0)
	if err := iw.header(); err != nil {
		return err
	}
	pages := 0
	link, err := walk(ctx, res.pages(client), lo, func(p *management.Page[*T]) (bool, error) {
		for _, item := range p.Items {
			if err := iw.write(item); err != nil {
				return false, err
			}
		}
		if err := iw.flush(); err != nil {
			return false, err
		}
		if pages++; p.NextPage != "" && pages == opts.Pages {
			// The link is the service's text: ListPage hands on none that List
			// would refuse, and it is escaped all the same.
			fmt.Fprintf(opts.IO.ErrOut, "More %s: resume with --next-page %s\n", res.plural, escapeControls(shellQuote(p.NextPage)))
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		_ = iw.flush()
		switch {
		case refusedLink(link, err):
			return errtext.Errorf("the page link was refused (%w): list again without --next-page", err)
		case ctx.Err() != nil && link != "":
			return errtext.Errorf("interrupted after %d %s: resume with --next-page %s", iw.written, res.plural, shellQuote(link))
		}
		return err
	}
	return iw.footer()
}

// shellQuote quotes s for a POSIX shell: a page link holds "?" and "&".
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
