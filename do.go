package management

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
)

// Do sends one request to an endpoint of the management API that the SDK
// has no method for yet (one the service added since, or the events
// collection the spec mentions without showing), with everything a typed
// method's request gets, on the same request path: the management token
// (fetched, cached, refreshed, and the request replayed once with a new one
// after a 401, whatever the method: the service did nothing), the retries
// and their waits, the pause a 429 or 503 with Retry-After starts, the
// bound on the answer's size (Config.MaxResponseBytes), the redaction of
// every error, log record and hook, the Observer's hooks, and the same
// errors (*APIError and its sentinels, *TransportError, *DecodeError, ...).
//
// method is GET, HEAD, POST, PUT, PATCH or DELETE. path is below
// Config.BaseURL and Config.PathPrefix, escaped, with its query if any:
// "/users/u-1", "/things?order_by=updatedAt" (url.PathEscape an id you put
// in it). A path that begins with the prefix and "/" is a next_page link,
// requested as it stands (the prefix is not added twice) and checked as
// List checks the links it follows. Do refuses, with an error matching
// ErrInvalidArgument and before anything is sent (not even a token
// request): another method, an empty path, an absolute URL (the base URL's
// own too), a path that does not start with "/" or starts with "//", one
// with a space, a control character (tab and DEL too), a non-ASCII byte, a
// backslash or a fragment, one that a server could resolve out of the
// prefix ("." or ".." segments, in any percent-encoding, twice encoded
// too), a body json.Marshal refuses, and an out that is neither nil nor a
// non-nil pointer. A refused next_page link matches ErrInvalidPageLink too.
//
// body, when not nil, is sent as JSON, with Content-Type: application/json:
// a json.RawMessage or []byte as it is, anything else as json.Marshal
// encodes it. out, when not nil, receives the JSON of a 2xx answer as
// json.Unmarshal decodes into the type it points to (a *json.RawMessage
// gets the bytes, numbers in an any are float64); a 2xx with an empty body
// leaves out as it was. An answer that is not JSON of out's type is a
// *DecodeError naming the method and path, and out may then hold part of
// it, as with json.Unmarshal. With out nil, the answer's body is read and
// dropped.
//
// Retries: a GET, HEAD, PUT or DELETE is retried as the typed methods'
// requests are (after a 429, a 5xx in 500, 502, 503 and 504, or a failed
// connection). A POST or PATCH may not be safe to repeat, so it is sent
// again only when it cannot have reached the service: after a 429 (with
// its Retry-After waited for), or a connection that was never made; after
// a 5xx, or a connection cut once the request may have been written, the
// error is returned. The typed methods keep their own rules.
//
// A Do is seen without its path: the Observer's Operation.Route is "" and
// PathValues nil, Attempt.URL holds "REDACTED" for the path and no query,
// log records name the route "Client.Do" instead of the path, and the otel
// module names its spans and metrics by the method alone (no route
// template is known: the HTTP semantic conventions' low-cardinality rule).
// The errors' Path is the path below the prefix, without the query, as the
// typed methods give it. The pause a 429 or 503 with Retry-After starts
// holds every Do of the same method, whatever its path, and no typed
// method: the requests of Do are one route for each method, "GET Client.Do"
// and so on, so that no path value is kept.
//
// Answers of the token and authenticate endpoints can carry credentials:
// as for the typed methods, an error never quotes their bodies.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	if c == nil || c.tokens == nil {
		return errNotNewClient
	}
	req, err := c.doRequest(method, path, body, out)
	if err != nil {
		return err
	}
	if out != nil {
		out = doOut{out}
	}
	_, err = c.do(ctx, req, out)
	return err
}

// doRequest checks Do's arguments and returns its request.
func (c *Client) doRequest(method, path string, body, out any) (*request, error) {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil, errorf("%w: Client.Do: method %.20q is none of GET, HEAD, POST, PUT, PATCH and DELETE", ErrInvalidArgument, method)
	}
	if out != nil {
		if v := reflect.ValueOf(out); v.Kind() != reflect.Pointer || v.IsNil() {
			return nil, errorf("%w: Client.Do: out is a %T; want nil or a non-nil pointer to decode the answer into", ErrInvalidArgument, out)
		}
	}
	data, err := requestBody(body)
	if err != nil {
		return nil, err
	}
	r := c.ownRedactor(c.currentToken()) // the path may echo a credential: its errors are redacted
	link, err := c.doLink(path, r)
	if err != nil {
		return nil, err
	}
	req := c.linkRequest(link, r)
	req.method, req.body = method, data
	req.once = method == http.MethodPost || method == http.MethodPatch
	req.secret = secretPath(link, c.prefix)
	return req, nil
}

// doLink returns what Do requests below the base URL for path: a next_page
// link as it stands, anything else below the prefix, each checked as List
// checks a link (path.go). r redacts the path where an error names it.
func (c *Client) doLink(path string, r *redactor) (string, error) {
	if strings.HasPrefix(path, c.prefix+"/") {
		if err := c.checkPageLink(path, r); err != nil {
			return "", errorf("%w: Client.Do: %w", ErrInvalidArgument, err)
		}
		return path, nil
	}
	// The path alone is checked for its form (the prefix is
	// Config.PathPrefix, which NewClient checked), then the URL it makes.
	problem := linkProblem(path)
	if problem == "" {
		problem = c.urlProblem(c.prefix + path)
	}
	if problem != "" {
		return "", errorf("%w: Client.Do: path %s: %s", ErrInvalidArgument, r.linkText(path), problem)
	}
	return c.prefix + path, nil
}

// requestBody is Do's body as JSON, nil for none.
func requestBody(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return b, nil
	case []byte:
		return b, nil
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, errorf("%w: Client.Do: the body cannot be sent as JSON: %w", ErrInvalidArgument, err)
	}
	return data, nil
}

// secretPath reports whether link, below the base URL, is the token or the
// authenticate endpoint, whose answers can carry credentials, however a
// server may read it (another case, escapes, a trailing slash).
func secretPath(link, prefix string) bool {
	p, _, _ := strings.Cut(link, "?")
	p = strings.TrimPrefix(p, prefix)
	for form := range decodings(p) {
		switch strings.ToLower(strings.TrimRight(form, "/")) {
		case "/auth/token", "/authenticate":
			return true
		}
	}
	return false
}

// doOut is Do's out as decodeJSON decodes it: as json.Unmarshal does, an
// empty body leaving it as it was.
type doOut struct{ out any }

func (d doOut) decode(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return json.Unmarshal(data, d.out)
}
