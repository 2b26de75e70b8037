package managementtest

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"

	"github.com/serviceconnect/management"
	"golang.org/x/time/rate"
)

// InMemoryURL is the URL of a server made by NewInMemoryServer. The name is
// reserved (RFC 2606), so a request that bypasses Server.Transport fails
// instead of reaching some other host.
const InMemoryURL = "https://managementtest.invalid"

// Retry waits of the Config that Server.Config returns: short, so that
// tests injecting failures with FailNext run fast.
const (
	clientRetryWaitMin = time.Millisecond
	clientRetryWaitMax = 50 * time.Millisecond
)

// A Server is an in-memory implementation of the management API, for tests
// of code that uses package management. It starts empty: seed it with
// AddUser and AddThing, point a client at it with Client or Config, and
// inspect it with User, Thing and Requests.
//
// A Server is safe for concurrent use by multiple goroutines.
type Server struct {
	// URL is the base URL of the server: "http://127.0.0.1:port" for
	// NewServer, InMemoryURL for NewInMemoryServer. No trailing slash.
	URL string
	// ClientID and ClientSecret are the credentials the token endpoint
	// accepts (see WithCredentials). They are read-only: the server and
	// Config use their own copy, so changing them has no effect.
	ClientID     string
	ClientSecret string

	opts          options
	escapedPrefix string // opts.pathPrefix as it appears in a request's escaped path
	handler       http.Handler
	mux           *http.ServeMux   // the routes, below the prefix
	methods       []string         // the methods of the routes, sorted
	srv           *httptest.Server // nil for an in-memory server

	closeOnce sync.Once
	// closed is closed by Close, to end pending delays. An in-memory
	// server leaves it nil: its channel could cross a synctest bubble's edge.
	closed chan struct{}

	clientOnce sync.Once
	client     *management.Client

	limiter *rate.Limiter // nil without WithRateLimit

	mu            sync.Mutex // guards everything below
	limited       int        // requests answered 429 by limiter
	store         store
	tokens        map[string]time.Time // management token -> expiry
	endUsers      map[string]string    // End User token -> user id
	snapshots     map[string]*snapshot // page snapshot id -> snapshot
	snapshotOrder []string             // ids of snapshots, oldest first
	faults        faults
	requests      map[Route]int
	log           []*Request // at most maxLog, oldest first
}

// NewServer starts and returns a Server listening on a loopback address.
// The caller should call Close when finished, to shut it down.
//
// Inside a testing/synctest bubble, use NewInMemoryServer instead: network
// I/O does not let the bubble's clock advance.
func NewServer(opts ...Option) *Server {
	s := newServer(opts)
	s.closed = make(chan struct{})
	s.srv = httptest.NewServer(s.handler)
	s.URL = s.srv.URL
	return s
}

// NewInMemoryServer returns a Server that listens nowhere: its URL is
// InMemoryURL, and its Client, Config and Transport reach it through an
// http.RoundTripper that calls its Handler directly. Client and fake then
// run entirely in the caller's goroutines, which testing/synctest needs
// to run token expiry, latency and retry waits on its fake clock.
// Close is optional.
func NewInMemoryServer(opts ...Option) *Server {
	s := newServer(opts)
	s.URL = InMemoryURL
	return s
}

func newServer(opts []Option) *Server {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.clientID == "" {
		o.clientID, o.clientSecret = "client-"+rand.Text(), rand.Text()
	}
	s := &Server{
		ClientID:      o.clientID,
		ClientSecret:  o.clientSecret,
		opts:          o,
		escapedPrefix: (&url.URL{Path: o.pathPrefix}).EscapedPath(),
	}
	if o.rateLimit > 0 {
		s.limiter = rate.NewLimiter(o.rateLimit, o.rateBurst)
	}
	s.reset()
	s.mux, s.methods = newMux(s.serveRoute)
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s
}

// Reset empties the server as if it were new: Users, Things, management
// and End User tokens, page links, pending faults, request counts and the
// log. Its options and credentials stay, and so does Client: its cached
// management token is refused once (401), and it fetches a new one, as
// after ExpireTokens. Requests under way go on against the emptied server.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

// reset empties the server's state. s.mu must be held (or s unshared).
func (s *Server) reset() {
	s.store = newStore()
	s.tokens = make(map[string]time.Time)
	s.endUsers = make(map[string]string)
	s.snapshots = make(map[string]*snapshot)
	s.snapshotOrder = nil
	s.faults = faults{}
	s.requests = make(map[Route]int)
	s.log = nil
	s.limited = 0
}

// Close shuts down a server started by NewServer and waits for its
// outstanding requests. It first ends their DelayNext delays: a request
// still waiting is dropped without an answer, as by a server going down,
// so that Close does not wait out the delay. Close does nothing for an
// in-memory server, whose requests run on their callers' goroutines.
func (s *Server) Close() {
	if s.srv == nil {
		return
	}
	s.closeOnce.Do(func() { close(s.closed) })
	s.srv.Close()
}

// Handler returns the server's HTTP handler: the whole fake, without a
// listener. Paths start with the configured path prefix (DefaultPathPrefix
// unless WithPathPrefix).
func (s *Server) Handler() http.Handler {
	return s.handler
}

// Transport returns an http.RoundTripper that serves every request with
// the server's Handler, in memory, whatever the request's host. The
// request's context bounds latency injected with DelayNext.
func (s *Server) Transport() http.RoundTripper {
	return memoryTransport{handler: s.handler}
}

// Config returns the management.Config that Client uses: this server's URL,
// credentials, path prefix and unset marker, an HTTP client that reaches
// the server (in memory for NewInMemoryServer), and retry waits of 1 to 50
// milliseconds so that tests injecting failures run fast. Change it (add a
// Logger, other retry settings) and pass it to management.NewClient.
func (s *Server) Config() management.Config {
	prefix := s.opts.pathPrefix
	if prefix == "" {
		prefix = "/"
	}
	httpClient := &http.Client{Transport: s.Transport()}
	if s.srv != nil {
		httpClient = s.srv.Client()
	}
	return management.Config{
		BaseURL:      s.URL,
		ClientID:     s.opts.clientID,
		ClientSecret: s.opts.clientSecret,
		HTTPClient:   httpClient,
		PathPrefix:   prefix,
		UnsetMarker:  s.opts.unsetMarker,
		RetryWaitMin: clientRetryWaitMin,
		RetryWaitMax: clientRetryWaitMax,
	}
}

// Client returns a management.Client configured for this server with
// Config. Every call returns the same Client, so its token is shared.
func (s *Server) Client() *management.Client {
	s.clientOnce.Do(func() {
		c, err := management.NewClient(s.Config())
		if err != nil {
			panic(fmt.Sprintf("managementtest: Server.Client: %v", err))
		}
		s.client = c
	})
	return s.client
}

// String describes s without its credentials.
func (s *Server) String() string {
	return fmt.Sprintf("managementtest.Server{URL:%q}", s.URL)
}

// GoString is String, so that %#v does not print the client secret and
// the tokens a Server holds.
func (s *Server) GoString() string {
	return s.String()
}
