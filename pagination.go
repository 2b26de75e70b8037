package management

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
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
}

// page fetches the first page, or the page opts.NextPage links to.
func (l list[W, T]) page(ctx context.Context, opts *ListOptions) (*Page[*T], error) {
	op, err := l.firstOperation(opts)
	if err != nil {
		return nil, err
	}
	items, next, err := l.fetch(ctx, op)
	if err != nil {
		return nil, err
	}
	// A page that links to itself would make a caller's paging loop endless.
	if next != "" && next == l.visitKey(op) {
		return nil, errorf("%w %s: the page links to itself", ErrInvalidPageLink, linkForError(next))
	}
	p := &Page[*T]{NextPage: next}
	if len(items) > 0 {
		p.Items = make([]*T, len(items))
		for i := range items {
			p.Items[i] = &items[i]
		}
	}
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
		seen := newVisited(l.visitKey(op))
		cur := l.fetchResult(ctx, op)
		for n := 1; ; n++ {
			if cur.err != nil {
				yield(nil, l.pageError(n, cur.err))
				return
			}
			var next *request
			var linkErr error
			if cur.next != "" {
				next, linkErr = l.follow(cur.next, seen)
			}
			if o.Prefetch && next != nil {
				ahead = l.fetchAhead(ctx, next)
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
				cur = l.fetchResult(ctx, next)
			}
		}
	}
}

// pageResult is one fetched page, or why it could not be fetched.
type pageResult[T any] struct {
	items    []T
	next     string
	err      error
	panicked any // a panic of the prefetch, raised again in the ranging goroutine
}

func (l list[W, T]) fetchResult(ctx context.Context, op *request) pageResult[T] {
	items, next, err := l.fetch(ctx, op)
	return pageResult[T]{items: items, next: next, err: err}
}

// fetchAhead fetches a page in the background; the channel delivers it.
func (l list[W, T]) fetchAhead(ctx context.Context, op *request) <-chan pageResult[T] {
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
		ch <- l.fetchResult(ctx, op)
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
		if err := l.client.checkPageLink(o.NextPage); err != nil {
			return nil, errorf("%w: ListOptions.NextPage: %w", ErrInvalidArgument, err)
		}
		return l.client.linkRequest(o.NextPage).named(l.path), nil
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

// fetch requests one page and returns its items and next_page ("" when null).
func (l list[W, T]) fetch(ctx context.Context, op *request) ([]T, string, error) {
	var w W
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
// (the listing would never end), records it and returns its request.
func (l list[W, T]) follow(link string, seen *visited) (*request, error) {
	if err := l.client.checkPageLink(link); err != nil {
		return nil, err
	}
	if !seen.add(link) {
		return nil, errorf("%w %s: already followed in this listing", ErrInvalidPageLink, linkForError(link))
	}
	return l.client.linkRequest(link).named(l.path), nil
}

// visited is the set of links a listing has requested. It keeps a 64-bit
// hash of each in a slice rather than the links in a map: 8 bytes a page,
// so that ranging over a million Users holds tens of kilobytes, not the
// links' megabytes (a map costs about 70 bytes an entry). The linear search
// is nothing beside the HTTP request each page costs. Two different links
// sharing a hash (odds of 2^-64 a pair, with a seed of its own per listing)
// would end the listing with an error, never make it loop.
type visited struct {
	seed   maphash.Seed
	hashes []uint64
}

func newVisited(first string) *visited {
	v := &visited{seed: maphash.MakeSeed()}
	v.add(first)
	return v
}

// add records link and reports whether it was new.
func (v *visited) add(link string) bool {
	h := maphash.String(v.seed, link)
	if slices.Contains(v.hashes, h) {
		return false
	}
	v.hashes = append(v.hashes, h)
	return true
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

// checkPageLink reports whether link, a next_page value, may be requested
// as c.baseURL+link. The service's links are a path plus a query, appended to the base
// URL as they stand; anything that could reach another host or scheme,
// climb out of the base path, or be re-encoded on the way is refused, so
// that our Authorization header only ever travels where it belongs.
func (c *Client) checkPageLink(link string) error {
	if problem := linkProblem(link); problem != "" {
		return errorf("%w %s: %s", ErrInvalidPageLink, linkForError(link), problem)
	}
	// Belt and braces: parse what would be requested and check it is the
	// base URL's scheme and host, under its path, with the link unchanged.
	base, basePath := c.base, c.basePath
	u, err := url.Parse(c.baseURL + link)
	linkPath, linkQuery, _ := strings.Cut(link, "?")
	switch {
	case err != nil:
		return errorf("%w %s: not a valid URL path", ErrInvalidPageLink, linkForError(link))
	case u.Scheme != base.Scheme || u.Host != base.Host || u.User != nil || u.Opaque != "":
		return errorf("%w %s: leaves the base URL's host", ErrInvalidPageLink, linkForError(link))
	case !underPath(u.Path, base.Path):
		return errorf("%w %s: leaves the base URL's path", ErrInvalidPageLink, linkForError(link))
	case u.EscapedPath() != basePath+linkPath || u.RawQuery != linkQuery:
		return errorf("%w %s: would not be sent as given", ErrInvalidPageLink, linkForError(link))
	}
	return nil
}

// linkProblem says what is wrong with link, or "" when it is a path (plus
// query) starting with a single "/", of printable ASCII without backslash
// or fragment, and without a segment that a server could resolve as "." or
// ".." and so climb out of the base path (see dotSegment).
func linkProblem(link string) string {
	switch {
	case link == "":
		return "empty"
	case link[0] != '/':
		return "not a path starting with /"
	case len(link) > 1 && link[1] == '/':
		return "starts with // (another host)"
	}
	for i := 0; i < len(link); i++ {
		switch b := link[i]; {
		case b <= ' ' || b >= 0x7f:
			return "holds a space, a control or a non-ASCII character"
		case b == '\\':
			return "holds a backslash"
		case b == '#':
			return "holds a fragment"
		}
	}
	p, _, _ := strings.Cut(link, "?")
	if _, err := url.PathUnescape(p); err != nil {
		return "holds an invalid escape"
	}
	// Checked decoded too, as often as it decodes: a proxy and a server may
	// each decode %2e, %2f, %3b and %5c before they resolve dot segments.
	for form := range decodings(p) {
		switch {
		case strings.Contains(form, `\`):
			return "holds an escaped backslash"
		case dotSegment(form):
			return "holds a dot segment"
		}
	}
	return ""
}

// dotSegment reports whether a server could read a segment of p as "." or
// "..". Segments end at '/' and at '\' (which some servers take for one),
// and a segment's ";" path parameter is dropped first, as servlet
// containers do: "..;x" and ".;" are dot segments.
func dotSegment(p string) bool {
	for seg := range strings.FieldsFuncSeq(p, isPathSeparator) {
		seg, _, _ = strings.Cut(seg, ";")
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

func isPathSeparator(r rune) bool { return r == '/' || r == '\\' }

// decodings yields s, then s percent-decoded once, twice, and so on until
// nothing is left to decode: "%252e" yields "%252e", "%2e" and ".". Each
// round decodes the valid escapes and keeps the others, as a lenient server
// would. It ends, as each round that changes s makes it shorter.
func decodings(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for {
			if !yield(s) {
				return
			}
			next := lenientUnescape(s)
			if next == s {
				return
			}
			s = next
		}
	}
}

// lenientUnescape decodes every valid %XX escape of s and keeps the rest.
func lenientUnescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// underPath reports whether p is base or below it, at a segment boundary.
func underPath(p, base string) bool {
	base = strings.TrimSuffix(base, "/")
	if base == "" {
		return strings.HasPrefix(p, "/")
	}
	rest, ok := strings.CutPrefix(p, base)
	return ok && (rest == "" || rest[0] == '/')
}

// linkForError names a link in an error by its path alone, quoted and
// bounded: the query holds the page token, which has no place in errors
// and logs.
func linkForError(link string) string {
	p, _, _ := strings.Cut(link, "?")
	p, _, _ = strings.Cut(p, "#")
	return fmt.Sprintf("%.80q", p)
}
