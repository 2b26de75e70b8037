package managementtest

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	"github.com/serviceconnect/management"
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

	service // the state and the endpoints; Server adds the lifecycle

	handler http.Handler
	srv     *httptest.Server // nil for an in-memory server

	closeOnce sync.Once
	closed    chan struct{} // closed by Close; nil for an in-memory server (see service.closed)

	clientOnce sync.Once
	client     *management.Client
}

// NewServer starts and returns a Server listening on a loopback address.
// The caller should call Close when finished, to shut it down.
//
// Inside a testing/synctest bubble, use NewInMemoryServer instead: network
// I/O does not let the bubble's clock advance.
func NewServer(opts ...Option) *Server {
	s := newServer(opts, make(chan struct{}))
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
	s := newServer(opts, nil)
	s.URL = InMemoryURL
	return s
}

// newServer makes the Server of opts; closed, when not nil, is the channel
// Close closes.
func newServer(opts []Option, closed chan struct{}) *Server {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.clientID == "" {
		o.clientID, o.clientSecret = "client-"+rand.Text(), rand.Text()
	}
	if o.mgmtToken != "" && slices.Contains(o.endUserTokens, o.mgmtToken) {
		panic(fmt.Sprintf("managementtest: the token %q is both the management token and an End User token", o.mgmtToken))
	}
	s := &Server{ClientID: o.clientID, ClientSecret: o.clientSecret, closed: closed}
	s.service.init(o, closed)
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s
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

// Format writes String whatever the verb (quoted for %q): no verb, %d or
// %t included, prints the fields one by one, which would show the client
// secret and the tokens and read the state while requests change it.
func (s *Server) Format(f fmt.State, verb rune) { formatString(f, verb, s.String()) }
