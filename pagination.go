package management

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/serviceconnect/management/internal/linkset"
)

// OrderBy selects the column a list is ordered by.
type OrderBy string

// OrderByUpdatedAt orders a list by last update time. The zero OrderBy
// orders by creation time.
const OrderByUpdatedAt OrderBy = "updatedAt"

// Direction is the direction of a list's order.
type Direction string

// The list directions. The zero Direction is the service's default, descending.
const (
	Ascending  Direction = "asc"
	Descending Direction = "desc"
)

// ListOptions selects the order of a list, or the page to resume from.
// A nil *ListOptions lists from the first page in the default order
// (creation time, descending).
type ListOptions struct {
	OrderBy   OrderBy   // "" (creation time) or OrderByUpdatedAt
	Direction Direction // "" (descending), Ascending or Descending
	// NextPage resumes from a link returned in Page.NextPage. The link
	// carries its own order, so it cannot be combined with OrderBy or Direction.
	NextPage string
	// Prefetch makes List fetch the next page while the loop works on the
	// current one, so a loop that spends time on each page waits less for
	// the network. It holds one more page in memory, and a loop that stops
	// early may have fetched a page it never sees (the fetch is cancelled).
	// ListPage ignores it.
	Prefetch bool
}

// Page is one page of a list.
type Page[T any] struct {
	Items []T
	// NextPage is the link to the next page, "" on the last page. Pass it
	// as ListOptions.NextPage to continue.
	NextPage string
}

// list is one list endpoint. UsersService and ThingsService differ only in
// the path and in the key their wire page W holds the items T under, which
// contents reads; everything else (options, link checks, iteration) is here.
type list[W, T any] struct {
	client   *Client
	path     string                  // below the prefix: "/users"
	contents func(*W) ([]T, *string) // the items and next_page of a decoded page
	// reserve gives a wire page room for n items before it is decoded, so
	// that the decoder fills one slice instead of growing it by half,
	// about ten times, for a page of 100.
	reserve func(w *W, n int)
}

// page fetches the first page, or the page opts.NextPage links to.
func (l list[W, T]) page(ctx context.Context, opts *ListOptions) (*Page[*T], error) {
	op, err := l.firstOperation(opts)
	if err != nil {
		return nil, err
	}
	items, next, err := l.fetch(ctx, op, 0)
	if err != nil {
		return nil, err
	}
	p := &Page[*T]{}
	if len(items) > 0 {
		p.Items = make([]*T, len(items))
		for i := range items {
			p.Items[i] = &items[i]
		}
	}
	if next == "" {
		return p, nil
	}
	// A link List would refuse is not handed on: the page's items come
	// with the refusal, as List yields them before it. A page that links to
	// itself would make a caller's paging loop endless.
	r := l.client.ownRedactor(op.carried)
	if next == l.visitKey(op) {
		return p, errorf("%w %s: the page links to itself", ErrInvalidPageLink, r.linkText(next))
	}
	if err := l.client.checkPageLink(next, r); err != nil {
		return p, err
	}
	p.NextPage = next
	return p, nil
}

// all iterates over every item, following next_page links. The options are
// copied now; every range over the result starts again from the first page
// (or the copied NextPage). With o.Prefetch, page n+1 is fetched while the
// loop works on page n; however the loop ends, that fetch is cancelled and
// waited for, so no goroutine outlives the range.
func (l list[W, T]) all(ctx context.Context, opts *ListOptions) iter.Seq2[*T, error] {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	return func(yield func(*T, error) bool) {
		ctx := ctx // each range derives its own, below
		op, err := l.firstOperation(&o)
		if err != nil {
			yield(nil, err)
			return
		}
		var ahead <-chan pageResult[T] // the prefetch under way, if any
		if o.Prefetch {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer func() {
				cancel()
				if ahead != nil {
					<-ahead
				}
			}()
		}
		seen := linkset.New() // the guard the command-line tool shares
		seen.Add(l.visitKey(op))
		cur := l.fetchResult(ctx, op, 0)
		for n := 1; ; n++ {
			if cur.err != nil {
				yield(nil, l.pageError(n, cur.err))
				return
			}
			var next *request
			var linkErr error
			if cur.next != "" {
				next, linkErr = l.follow(cur.next, seen, l.client.ownRedactor(cur.carried))
			}
			if o.Prefetch && next != nil {
				ahead = l.fetchAhead(ctx, next, len(cur.items))
			}
			for i := range cur.items {
				if !yield(&cur.items[i], nil) {
					return
				}
			}
			switch {
			case linkErr != nil:
				yield(nil, l.pageError(n+1, linkErr))
				return
			case next == nil:
				return
			case ahead != nil:
				if cur, ahead = <-ahead, nil; cur.panicked != nil {
					panic(cur.panicked)
				}
			default:
				cur = l.fetchResult(ctx, next, len(cur.items))
			}
		}
	}
}

// pageResult is one fetched page, or why it could not be fetched.
type pageResult[T any] struct {
	items    []T
	next     string
	carried  *Token // the management token the page was fetched with: its link may echo it
	err      error
	panicked any // a panic of the prefetch, raised again in the ranging goroutine
}

// fetchResult fetches the page op asks for; hint is how many items the
// previous page held (the service's pages are alike), 0 for the first.
func (l list[W, T]) fetchResult(ctx context.Context, op *request, hint int) pageResult[T] {
	items, next, err := l.fetch(ctx, op, hint)
	return pageResult[T]{items: items, next: next, carried: op.carried, err: err}
}

// fetchAhead fetches a page in the background; the channel delivers it.
func (l list[W, T]) fetchAhead(ctx context.Context, op *request, hint int) <-chan pageResult[T] {
	ch := make(chan pageResult[T], 1)
	go func() {
		// Hosted code (a RoundTripper, a TokenSource, a hook) may panic: the
		// panic goes to the loop's goroutine, as it would without Prefetch,
		// rather than kill the process from this one.
		defer func() {
			if p := recover(); p != nil {
				ch <- pageResult[T]{panicked: p}
			}
		}()
		ch <- l.fetchResult(ctx, op, hint)
	}()
	return ch
}

// firstOperation checks opts and returns the request of the first page:
// the list path with the order asked for, or the link to resume from.
func (l list[W, T]) firstOperation(opts *ListOptions) (*request, error) {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	switch o.OrderBy {
	case "", OrderByUpdatedAt:
	default:
		return nil, errorf("%w: ListOptions.OrderBy %q is not supported (want %q or empty)", ErrInvalidArgument, o.OrderBy, OrderByUpdatedAt)
	}
	switch o.Direction {
	case "", Ascending, Descending:
	default:
		return nil, errorf("%w: ListOptions.Direction %q is not supported (want %q, %q or empty)", ErrInvalidArgument, o.Direction, Ascending, Descending)
	}
	if o.NextPage != "" {
		if o.OrderBy != "" || o.Direction != "" {
			return nil, errorf("%w: ListOptions.NextPage cannot be combined with OrderBy or Direction (the link carries its own order)", ErrInvalidArgument)
		}
		r := l.client.ownRedactor(l.client.currentToken())
		if err := l.client.checkPageLink(o.NextPage, r); err != nil {
			return nil, errorf("%w: ListOptions.NextPage: %w", ErrInvalidArgument, err)
		}
		return l.client.linkRequest(o.NextPage, r).named(l.path), nil
	}
	return l.client.newRequest(http.MethodGet, l.path, orderQuery(o.OrderBy, o.Direction), nil).named(l.path), nil
}

// orderQuery encodes the order parameters that were asked for, in a fixed
// order, and nothing else.
func orderQuery(by OrderBy, dir Direction) string {
	var q []string
	if by != "" {
		q = append(q, "order_by="+url.QueryEscape(string(by)))
	}
	if dir != "" {
		q = append(q, "order_direction="+url.QueryEscape(string(dir)))
	}
	return strings.Join(q, "&")
}

// fetch requests one page and returns its items and next_page ("" when
// null), with room reserved for hint items (see reserve).
func (l list[W, T]) fetch(ctx context.Context, op *request, hint int) ([]T, string, error) {
	var w W
	if hint > 0 && l.reserve != nil {
		l.reserve(&w, hint)
	}
	if _, err := l.client.do(ctx, op, pageBody{&w}); err != nil {
		return nil, "", err
	}
	items, next := l.contents(&w)
	if next == nil {
		return items, "", nil
	}
	return items, *next, nil
}

// pageBody is the page that decodeJSON decodes into page, a pointer to a
// list's wire page. A page holds no interface value, so json.Unmarshal
// (which has no UseNumber) decodes it as the json.Decoder of decodeJSON
// does; the body is read whole into a pooled buffer first. A Decoder grows
// a buffer of its own by doubling, for every page: more than half of the
// bytes a range allocated.
type pageBody struct{ page any }

// pageBuffers holds the buffers pages are read into; one larger than
// maxPooledPage is left to the garbage collector.
var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledPage = 1 << 20

// decode reads r to its end and decodes it into p.page, then lets the page
// check what it got. An answer that does not decode is decoded again by
// decodeJSON, whose error is the one every other answer gets ("empty
// body", data after the JSON value).
func (p pageBody) decode(r io.Reader) error {
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledPage {
			pageBuffers.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		return err
	}
	if err := json.Unmarshal(buf.Bytes(), p.page); err != nil {
		if derr := decodeJSON(bytes.NewReader(buf.Bytes()), p.page); derr != nil {
			return derr
		}
		return err
	}
	if v, ok := p.page.(interface{ validate() error }); ok {
		return v.validate()
	}
	return nil
}

// follow checks a next_page link, refuses one already followed in this run
// (the listing would never end), records it and returns its request; r
// redacts the link where it names it.
func (l list[W, T]) follow(link string, seen *linkset.Set, r *redactor) (*request, error) {
	if err := l.client.checkPageLink(link, r); err != nil {
		return nil, err
	}
	if !seen.Add(link) {
		return nil, errorf("%w %s: already followed in this listing", ErrInvalidPageLink, r.linkText(link))
	}
	return l.client.linkRequest(link, r).named(l.path), nil
}

// visitKey is what op requests, below the base URL, in the form of a
// next_page link, so that a link back to the first page counts as a repeat.
func (l list[W, T]) visitKey(req *request) string {
	return strings.TrimPrefix(req.url, l.client.baseURL)
}

// pageError says which page of a listing failed; the first page's error
// is returned as it is.
func (l list[W, T]) pageError(n int, err error) error {
	if n == 1 {
		return err
	}
	return errorf("listing %s, page %d: %w", l.path, n, err)
}
