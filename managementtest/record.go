package managementtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/serviceconnect/management"
)

// maxRecordedBody bounds an answer's body a Recorder keeps, 32 MiB: the
// SDK's own bound by default (Config.MaxResponseBytes). The service's
// answers are far smaller. docs/defaults.md gives it (TestDefaultsTable
// in the root module reads it from here).
const maxRecordedBody = 32 << 20

// reasonRefused is the reason of the answer a Recorder gives, without
// sending it, to a request it must not record.
const reasonRefused = "MANAGEMENTTEST.RECORDING_REFUSED"

// RecordOptions are the options of NewRecorder and UseCassette.
type RecordOptions struct {
	// AllowedBaseURLs are the base URLs recording may send requests to: a
	// sandbox's, never a production service's, or the fake's while there
	// is no sandbox (InMemoryURL). NewRecorder refuses any other base URL,
	// so that a Config read from the environment cannot point a recording
	// test at the wrong service. Required to record: NewRecorder, and
	// UseCassette when it records, fail without it. A replay does not read
	// it: it sends nothing anywhere.
	AllowedBaseURLs []string
	// AllowWrites lets the requests that change the service's data
	// (update a Thing, associate, disassociate: any method but GET, HEAD
	// and OPTIONS, except the token and authenticate requests, which
	// change nothing) through to the service. Without it, such a request
	// is not sent: it is answered 501 with the reason
	// MANAGEMENTTEST.RECORDING_REFUSED, which the SDK does not retry, and
	// Close reports it.
	AllowWrites bool
	// Scrub, when set, is called with each interaction before the cassette
	// is written, after the credentials were replaced: it may replace the
	// personal data the answers hold (names, emails). What it changes in a
	// request is what a replay then matches requests against.
	Scrub func(*Interaction)
	// Transport sends the requests a Recorder records; nil is
	// http.DefaultTransport. UseCassette sets it to the transport of the
	// live Config's HTTPClient, if any.
	Transport http.RoundTripper
	// Live returns the Config that UseCassette records with: the sandbox's
	// base URL and credentials. Nil is management.ConfigFromEnv. Only
	// UseCassette reads it, and only when it records.
	Live func() (management.Config, error)
}

// A Recorder is an http.RoundTripper that sends requests on, through
// RecordOptions.Transport, and records them and their answers: set it as
// the Transport of Config.HTTPClient. Close writes the cassette file,
// with every credential replaced by a placeholder (see Cassette).
//
// A Recorder refuses, without sending them, the requests that are not
// below its base URL and, unless RecordOptions.AllowWrites, those that
// change the service's data: each is answered 501 (reason
// MANAGEMENTTEST.RECORDING_REFUSED), which the SDK does not retry.
//
// A Recorder is safe for concurrent use by multiple goroutines; the
// interactions are written in the order their requests were sent.
type Recorder struct {
	path     string
	baseURL  string
	base     *url.URL
	basePath string // base's path, escaped, without a trailing slash
	next     http.RoundTripper
	allowW   bool
	scrub    func(*Interaction)
	maxBody  int // maxRecordedBody; tests make it smaller

	mu        sync.Mutex
	exchanges []*exchange // in the order sent
	problems  []string    // refused requests and answers not recorded, for Close
	closed    bool
}

// exchange is one request and its answer as they were sent and received,
// credentials and all: what Close redacts.
type exchange struct {
	method, path, query string
	auth, contentType   []string
	body                string
	route               Route // "" when the path is no endpoint's

	done     bool
	status   int
	header   http.Header
	respBody string
	cut      bool
	err      string
}

// NewRecorder returns a Recorder that records the requests sent to
// baseURL in the cassette file at path, which Close writes (its directory
// is made if need be). baseURL must be one of opts.AllowedBaseURLs
// (scheme and host alike but for case, default ports written or not, the
// same path but for a trailing slash).
func NewRecorder(path, baseURL string, opts RecordOptions) (*Recorder, error) {
	if path == "" {
		return nil, errors.New("managementtest: NewRecorder: the cassette path is empty")
	}
	base, err := parseBase(baseURL)
	if err != nil {
		return nil, fmt.Errorf("managementtest: NewRecorder: %w", err)
	}
	if len(opts.AllowedBaseURLs) == 0 {
		return nil, errors.New("managementtest: NewRecorder: RecordOptions.AllowedBaseURLs names no base URL; name the sandbox's, so that a recording never reaches another service")
	}
	allowed := false
	for _, a := range opts.AllowedBaseURLs {
		u, err := parseBase(a)
		if err != nil {
			return nil, fmt.Errorf("managementtest: NewRecorder: RecordOptions.AllowedBaseURLs: %w", err)
		}
		allowed = allowed || sameBase(u, base)
	}
	if !allowed {
		return nil, fmt.Errorf("managementtest: NewRecorder: the base URL %s is not among RecordOptions.AllowedBaseURLs; a recording sends real requests, so it runs against the services named there only", base.Redacted())
	}
	next := opts.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	return &Recorder{
		path: path, baseURL: strings.TrimSuffix(baseURL, "/"), base: base, basePath: basePathOf(base), next: next,
		allowW: opts.AllowWrites, scrub: opts.Scrub, maxBody: maxRecordedBody,
	}, nil
}

// RoundTrip sends req on and records it with its answer, or refuses it
// (see Recorder). An answer's body is read whole before RoundTrip returns;
// an error is returned as it came, and recorded.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.base == nil { // a Recorder not made by NewRecorder: it knows no base URL to hold requests to
		return nil, errors.New("managementtest: Recorder: not made by NewRecorder; it records nothing")
	}
	body, err := readRequestBody(req)
	if err != nil {
		return nil, fmt.Errorf("managementtest: Recorder: reading the request's body: %w", err)
	}
	if why := r.refusal(req); why != "" {
		r.note(req.Method + " " + req.URL.EscapedPath() + ": " + why)
		return refusedAnswer(req, reasonRefused, "managementtest: the recording refused "+req.Method+" "+req.URL.EscapedPath()+": "+why), nil
	}
	e := &exchange{
		method: req.Method, path: req.URL.EscapedPath(), query: req.URL.RawQuery,
		auth: headerValues(req.Header, "Authorization"), contentType: headerValues(req.Header, "Content-Type"),
		body: string(body), route: r.routeOf(req),
	}
	r.mu.Lock()
	closed := r.closed
	if !closed {
		r.exchanges = append(r.exchanges, e)
	}
	r.mu.Unlock()
	if closed {
		return nil, errors.New("managementtest: Recorder: a request after Close")
	}

	out := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := r.next.RoundTrip(out)
	if err != nil {
		r.finish(e, func() { e.err = err.Error() })
		return nil, err
	}
	data, readErr := io.ReadAll(io.LimitReader(resp.Body, int64(r.maxBody)+1))
	rest, cut := io.Reader(bytes.NewReader(data)), readErr != nil
	switch {
	case cut:
		rest = io.MultiReader(rest, failingReader{readErr}) // the SDK sees the failure where it came
	case len(data) > r.maxBody:
		// Sent on whole, recorded cut (a replay fails there), and reported.
		rest, cut = io.MultiReader(rest, resp.Body), true
		r.note(req.Method + " " + req.URL.EscapedPath() + ": the answer is larger than " + strconv.Itoa(r.maxBody) + " bytes, which a cassette does not hold whole")
		data = data[:r.maxBody]
	}
	r.finish(e, func() {
		e.status, e.header, e.respBody, e.cut = resp.StatusCode, resp.Header.Clone(), string(data), cut
	})
	resp.Body = bodyOf{Reader: rest, Closer: resp.Body}
	return resp, nil
}

// bodyOf is a body read from Reader whose Close closes the original one.
type bodyOf struct {
	io.Reader
	io.Closer
}

// readRequestBody reads and closes req's body, if any.
func readRequestBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

// refusal says why req must not be sent, "" when it may.
func (r *Recorder) refusal(req *http.Request) string {
	u := req.URL
	_, below := belowBase(r.basePath, u.EscapedPath())
	if !strings.EqualFold(u.Scheme, r.base.Scheme) || !strings.EqualFold(u.Hostname(), r.base.Hostname()) || port(u) != port(r.base) || !below {
		return "it is not below the base URL " + r.base.Redacted()
	}
	if !r.allowW && changesData(req.Method, r.routeOf(req)) {
		return "it changes the service's data; set RecordOptions.AllowWrites to record writes (against a sandbox)"
	}
	return ""
}

// routeOf returns the endpoint req reaches, "" for none.
func (r *Recorder) routeOf(req *http.Request) Route {
	below, _ := belowBase(r.basePath, req.URL.EscapedPath())
	route, _, _, _ := matchRoute(req.Method, below)
	return route
}

// refusedAnswer is the 501 a Recorder or a Replayer gives instead of an
// answer: final (the SDK retries no 501), in the API's error shape, with
// a message that says why.
func refusedAnswer(req *http.Request, reason, message string) *http.Response {
	body := encode(apiError{Reason: reason, ErrorMessage: message})
	return &http.Response{
		Status:        "501 Not Implemented",
		StatusCode:    http.StatusNotImplemented,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(body))}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

func (r *Recorder) note(problem string) {
	r.mu.Lock()
	r.problems = append(r.problems, problem)
	r.mu.Unlock()
}

func (r *Recorder) finish(e *exchange, f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
	e.done = true
}

// Close writes the cassette file: the interactions whose answers came (a
// request still under way is left out, and counted among the problems),
// with every credential replaced.
// It writes nothing, and says so, if a credential would remain in the
// file in a form the placeholders missed. It returns an error that lists
// what the cassette lacks, if anything (the requests the Recorder refused,
// an answer too large to hold whole), after writing the rest.
// Requests after Close fail; a second Close does nothing.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	var done []*exchange
	problems := slices.Clone(r.problems)
	for _, e := range r.exchanges {
		if e.done {
			done = append(done, e)
		} else {
			problems = append(problems, e.method+" "+e.path+": still under way at Close, left out")
		}
	}
	r.exchanges = nil // what Close wrote is no longer held
	r.mu.Unlock()

	c, creds := r.cassette(done)
	data, err := c.encode()
	if err != nil {
		return fmt.Errorf("managementtest: Recorder.Close: %w", err)
	}
	if creds.leaked(string(data)) {
		return fmt.Errorf("managementtest: Recorder.Close: the cassette %s would hold a credential in a form its placeholders missed; nothing was written", r.path)
	}
	if err := writeFile(r.path, data); err != nil {
		return fmt.Errorf("managementtest: Recorder.Close: %w", err)
	}
	for i, p := range problems { // a path may echo a credential
		problems[i] = creds.replace(p, false)
	}
	if len(problems) > 0 {
		return fmt.Errorf("managementtest: the cassette %s was written, but not whole (%d problems):\n\t%s", r.path, len(problems), strings.Join(problems, "\n\t"))
	}
	return nil
}

// cassette makes the cassette of exchanges: first it learns every
// credential where it stands, in order, then it replaces them everywhere.
func (r *Recorder) cassette(exchanges []*exchange) (*Cassette, *credentials) {
	creds := &credentials{}
	type positional struct {
		auth              []string
		reqBody, respBody string
	}
	pos := make([]positional, len(exchanges))
	for i, e := range exchanges {
		for _, v := range e.auth {
			pos[i].auth = append(pos[i].auth, creds.learnAuthorization(v, true))
		}
		pos[i].reqBody = creds.learnRequestBody(e.body, e.route)
		pos[i].respBody = e.respBody
		if e.route.is(tokenEndpoint) {
			pos[i].respBody = creds.learnTokenAnswer(e.respBody)
		}
	}
	c := &Cassette{BaseURL: r.baseURL, Interactions: make([]Interaction, len(exchanges))}
	for i, e := range exchanges {
		req := RecordedRequest{
			Method: e.method,
			Path:   creds.replace(e.path, false),
			Query:  creds.replace(e.query, false),
			Body:   creds.replace(pos[i].reqBody, false),
		}
		if len(pos[i].auth) > 0 || len(e.contentType) > 0 {
			req.Header = http.Header{}
			if len(pos[i].auth) > 0 {
				req.Header["Authorization"] = pos[i].auth
			}
			for _, v := range e.contentType {
				req.Header.Add("Content-Type", creds.replace(v, false))
			}
		}
		resp := RecordedResponse{
			Status: e.status,
			Header: creds.header(e.header, func(name string) bool { return name != "Content-Length" && name != "Date" }),
			Body:   creds.replace(pos[i].respBody, e.cut),
			Cut:    e.cut,
			Error:  creds.replace(e.err, false),
		}
		c.Interactions[i] = Interaction{Request: req, Response: resp}
		if r.scrub != nil {
			r.scrub(&c.Interactions[i])
		}
	}
	return c, creds
}

// String describes r by its cassette file and base URL; never the
// credentials the requests it recorded carried.
func (r *Recorder) String() string {
	return fmt.Sprintf("managementtest.Recorder{Cassette:%q, BaseURL:%q}", r.path, r.baseURL)
}

// GoString is String, so that %#v does not print the exchanges held.
func (r *Recorder) GoString() string { return r.String() }

// Format writes String whatever the verb (quoted for %q): no verb prints
// the exchanges it holds, credentials and all, field by field.
func (r *Recorder) Format(f fmt.State, verb rune) { formatString(f, verb, r.String()) }

// formatString writes s for any verb, quoted for %q.
func formatString(f fmt.State, verb rune, s string) {
	if verb == 'q' {
		s = strconv.Quote(s)
	}
	_, _ = io.WriteString(f, s)
}
