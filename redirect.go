package management

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// withoutRedirects returns the client the SDK sends through: a shallow copy
// of hc (nil: a client with its own pool) that follows no redirect. A 3xx
// is handed back as it is and becomes an *APIError, so that no credential
// is sent, and no write replayed, anywhere but where Config says. hc itself
// is left as it is: the caller may share it.
//
// hc.Timeout moves from the copy to keepRedirects, which applies it to each
// attempt as a context deadline: net/http enforces a client's Timeout that
// way only for its own transports, and for any other (keepRedirects is one)
// with a timer, channels and a goroutine per request.
func withoutRedirects(hc *http.Client) *http.Client {
	var c http.Client
	if hc != nil {
		c = *hc
	}
	next := c.Transport
	switch {
	case hc == nil:
		next = newTransport()
	case next == nil:
		next = http.DefaultTransport
	}
	c.Transport = keepRedirects{next: next, timeout: max(c.Timeout, 0)}
	c.Timeout = 0
	c.CheckRedirect = refuseRedirect
	return &c
}

func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// keepRedirects completes refuseRedirect: net/http parses a 3xx's Location
// before it asks CheckRedirect, and fails the call on one that does not
// parse, quoting it whole (query included) in an error that the retry
// layer would retry. Such a Location is emptied (net/http hands a 3xx with
// an empty Location back as it is), so that the 3xx comes back like any
// other.
//
// With a timeout, it bounds each exchange, the reading of the answer's body
// included, as http.Client.Timeout would: the deadline ends when the body
// is closed.
type keepRedirects struct {
	next    http.RoundTripper
	timeout time.Duration // 0: none
}

// RoundTrip sends req and keeps a redirect answer as it is.
func (t keepRedirects) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.timeout > 0 {
		ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
		resp, err := t.send(req.WithContext(ctx))
		if err != nil {
			cancel()
			return nil, err
		}
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
	return t.send(req)
}

func (t keepRedirects) send(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || !isRedirect(resp.StatusCode) {
		return resp, err
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		if _, perr := req.URL.Parse(loc); perr != nil {
			resp.Header.Set("Location", "")
		}
	}
	return resp, nil
}

// cancelOnClose is an answer's body whose exchange had a deadline: closing
// it releases the deadline's timer.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close closes the body and ends its exchange's deadline.
func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// CloseIdleConnections closes the idle connections of the transport below,
// as http.Client.CloseIdleConnections does when there is no wrapper.
func (t keepRedirects) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// maxRedirectPath bounds the path of a redirect's Location named in
// APIError.Message, once redacted whole.
const maxRedirectPath = 200

func isRedirect(status int) bool { return status >= 300 && status <= 399 }

// redirectError describes a redirect answered to req,
// without following it: where it pointed, by path only (a Location's host
// and query are not the caller's business and can carry anything), and
// whether that is another origin (scheme, host or port). The path came from
// outside: r redacts it whole before it is cut.
func redirectError(req *request, resp *http.Response, r *redactor) *APIError {
	e := &APIError{StatusCode: resp.StatusCode, Method: req.method, Path: req.path}
	e.Header, e.RequestID, _ = answerMeta(resp.Header, time.Now())
	locs := resp.Header.Values("Location")
	loc := resp.Header.Get("Location")
	from, ferr := url.Parse(req.url)
	to, terr := url.Parse(loc)
	switch {
	case len(locs) == 0:
		e.Message = "redirect not followed"
	case loc == "" || ferr != nil || terr != nil: // see keepRedirects
		e.Message = "redirect to an unreadable Location not followed"
	default:
		to = from.ResolveReference(to)
		path := r.kept(to.EscapedPath(), maxRedirectPath, false)
		where := "to " + path
		if origin(to) != origin(from) {
			where = "to another origin, path " + path + ","
		}
		e.Message = "redirect " + where + " not followed"
	}
	e.Message += "; check Config.BaseURL and Config.PathPrefix"
	return e
}

// origin is u's scheme, host and port, the port made explicit.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + explicitPort(u)
}

// explicitPort is u's port, or its scheme's when it has none.
func explicitPort(u *url.URL) string {
	switch port := u.Port(); {
	case port != "":
		return port
	case strings.EqualFold(u.Scheme, "https"):
		return "443"
	case strings.EqualFold(u.Scheme, "http"):
		return "80"
	}
	return ""
}
