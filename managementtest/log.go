package managementtest

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// maxLog bounds the requests that Log returns, oldest dropped first, so
// that a long test run does not pile them up.
const maxLog = 10000

// redacted replaces a credential in the log.
const redacted = "REDACTED"

// A Request is a request the server received, as Log returns it, with
// credentials redacted: the value of the Authorization header keeps its
// scheme only ("Bearer REDACTED", "Basic REDACTED"), as does the
// access_token of an authenticate body; Proxy-Authorization and Cookie
// headers and a client_secret member are redacted whole. Page tokens and
// identifiers are kept.
type Request struct {
	Method string
	// Path is the request's path as it was sent (escaped), with the prefix.
	Path string
	// Route is the endpoint the request reached, "" when it reached none
	// (answered 404 or 405; then PathValues is nil too).
	Route Route
	// PathValues are the Route's path values, unescaped, by the spec's
	// names: {"user_id": "u/1"}. Nil for a route without.
	PathValues map[string]string
	// Query is the query string, nil when there was none.
	Query url.Values
	// Header is the request's header, redacted.
	Header http.Header
	// Body is the body decoded as JSON, with numbers as json.Number and
	// credentials redacted; nil when the body was empty or not JSON.
	Body any
}

// entryKey is the context key under which serveHTTP hands the log entry of
// a request to the handler the mux picks (an endpoint, or the refusal of
// the rest), which adds the route and path values: the mux finds those,
// and the path it sees is no longer the one sent.
type entryKey struct{}

// receive reads r's body and returns r's log entry, redacted, and a body to
// serve r with in place of the one read.
func receive(r *http.Request) (*Request, io.ReadCloser) {
	var data []byte
	var err error
	if r.Body != nil { // a server's requests have one; a test's may not
		data, err = io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	}
	var body io.Reader = bytes.NewReader(data)
	if err != nil { // serve the same failure
		body = io.MultiReader(body, failingReader{err})
	}
	e := &Request{
		Method: r.Method,
		Path:   r.URL.EscapedPath(),
		Header: redactHeader(r.Header),
		Body:   redactBody(data),
	}
	if r.URL.RawQuery != "" {
		e.Query, _ = url.ParseQuery(r.URL.RawQuery) // keeps the pairs that parse
	}
	return e, io.NopCloser(body)
}

// withEntry returns in with e in its context and body as its body.
func withEntry(in *http.Request, e *Request, body io.ReadCloser) *http.Request {
	in = in.WithContext(context.WithValue(in.Context(), entryKey{}, e))
	in.Body = body
	return in
}

// record counts a request of route ("" for none) and adds its entry to the
// log. The entry is not changed afterwards.
func (s *service) record(e *Request, route Route, values map[string]string) {
	e.Route, e.PathValues = route, values
	s.mu.Lock()
	defer s.mu.Unlock()
	if route != "" {
		s.requests[route]++
	}
	if len(s.log) == maxLog {
		s.log = s.log[1:]
	}
	s.log = append(s.log, e)
}

// Log returns the requests the server received, oldest first, including
// refused and faulted ones and those that reached no endpoint: the last
// 10000 since the server was made or Reset. The result is a copy.
func (s *service) Log() []Request {
	s.mu.Lock()
	entries := slices.Clone(s.log)
	s.mu.Unlock()
	out := make([]Request, len(entries))
	for i, e := range entries {
		out[i] = e.clone()
	}
	return out
}

// clone returns a deep copy of e.
func (e *Request) clone() Request {
	c := *e
	c.PathValues = maps.Clone(e.PathValues)
	c.Header = e.Header.Clone()
	if e.Query != nil {
		c.Query = url.Values(http.Header(e.Query).Clone())
	}
	if e.Body != nil {
		c.Body = nil
		mustDecode(encode(e.Body), &c.Body)
	}
	return c
}

// redactHeader returns a copy of h without credentials.
func redactHeader(h http.Header) http.Header {
	c := h.Clone()
	for k, vs := range c {
		switch http.CanonicalHeaderKey(k) {
		case "Authorization":
			for i, v := range vs {
				vs[i] = redactCredential(v)
			}
		case "Proxy-Authorization", "Cookie":
			for i := range vs {
				vs[i] = redacted
			}
		}
	}
	return c
}

// redactBody decodes a JSON body and redacts the credentials it may carry.
func redactBody(data []byte) any {
	var v any
	if len(data) == 0 || decodeExact(data, &v) != nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if at, ok := obj["access_token"].(string); ok {
		obj["access_token"] = redactCredential(at)
	} else if obj["access_token"] != nil {
		obj["access_token"] = redacted
	}
	if obj["client_secret"] != nil {
		obj["client_secret"] = redacted
	}
	return v
}

// redactCredential keeps the scheme of "<scheme> <credential>".
func redactCredential(v string) string {
	if scheme, _, ok := strings.Cut(v, " "); ok && scheme != "" {
		return scheme + " " + redacted
	}
	return redacted
}
