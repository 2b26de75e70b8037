package management

import (
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
	c.Transport = keepRedirects{next}
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
type keepRedirects struct{ next http.RoundTripper }

// RoundTrip sends req and keeps a redirect answer as it is.
func (t keepRedirects) RoundTrip(req *http.Request) (*http.Response, error) {
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

// CloseIdleConnections closes the idle connections of the transport below,
// as http.Client.CloseIdleConnections does when there is no wrapper.
func (t keepRedirects) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// newTransport returns a transport with its own pool, sized for an SDK that
// many goroutines share (net/http keeps only 2 idle connections per host).
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

// maxRedirectPath bounds the path of a redirect's Location named in APIError.Message.
const maxRedirectPath = 200

func isRedirect(status int) bool { return status >= 300 && status <= 399 }

// redirectError describes a redirect answered to req,
// without following it: where it pointed, by path only (a Location's host
// and query are not the caller's business and can carry anything), and
// whether that is another origin (scheme, host or port).
func redirectError(req *request, resp *http.Response) *APIError {
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
		where := "to " + truncate(to.EscapedPath(), maxRedirectPath)
		if origin(to) != origin(from) {
			where = "to another origin, path " + truncate(to.EscapedPath(), maxRedirectPath) + ","
		}
		e.Message = "redirect " + where + " not followed"
	}
	e.Message += "; check Config.BaseURL and Config.PathPrefix"
	return e
}

// origin is u's scheme, host and port, the port made explicit.
func origin(u *url.URL) string {
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	switch {
	case port != "":
	case scheme == "https":
		port = "443"
	case scheme == "http":
		port = "80"
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}
