package managementtest

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// service is the fake's state and its endpoints, apart from the lifecycle
// (listener, Client, Close) that Server adds around it: what pstest's
// GServer is to its Server. Server embeds it, so that its methods are
// *Server's.
type service struct {
	opts    options
	limiter *rate.Limiter // nil without WithRateLimit
	// closed ends pending delays when Server.Close is called; nil (never
	// ready) for an in-memory server, whose channel could cross a synctest
	// bubble's edge.
	closed <-chan struct{}

	escapedPrefix string         // opts.pathPrefix as it appears in a request's escaped path
	mux           *http.ServeMux // the endpoints of routeTable, below the prefix, and the refusal of the rest
	methods       []string       // the methods of the endpoints, sorted

	mu             sync.Mutex // guards everything below
	limited        int        // requests answered 429 by limiter
	store          store
	tokens         map[string]time.Time // management token -> expiry
	endUsers       map[string]string    // End User token -> user id
	endUsersIssued int                  // the tokens of WithEndUserTokens issued
	snapshots      map[string]*snapshot // page snapshot id -> snapshot
	snapshotOrder  []string             // ids of snapshots, oldest first
	faults         faults
	requests       map[Route]int
	log            []*Request // at most maxLog, oldest first
}

// init sets up an empty service with every endpoint registered.
func (s *service) init(o options, closed <-chan struct{}) {
	s.opts, s.closed, s.mux = o, closed, http.NewServeMux()
	s.escapedPrefix = (&url.URL{Path: o.pathPrefix}).EscapedPath()
	if o.rateLimit > 0 {
		s.limiter = rate.NewLimiter(o.rateLimit, o.rateBurst)
	}
	s.reset()
	for _, spec := range routeTable {
		s.endpoint(spec.route, func(w http.ResponseWriter, r *http.Request) { spec.serve(s, w, r) })
	}
	slices.Sort(s.methods)
	// What no endpoint matches is refused in the API's error shape, not
	// ServeMux's plain text.
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.refuse(w, r) })
}

// endpoint registers serve for route on the mux, behind the steps every
// request of an endpoint takes: it is logged and counted, its staged
// faults and the rate limit apply, and, except on the token endpoint
// (which issues the token), the management token and the Content-Type are
// checked.
func (s *service) endpoint(route Route, serve http.HandlerFunc) {
	if !slices.Contains(s.methods, route.method()) {
		s.methods = append(s.methods, route.method())
	}
	s.mux.HandleFunc(string(route), func(w http.ResponseWriter, r *http.Request) {
		if r.Method != route.method() { // ServeMux routes HEAD to GET patterns; the spec has no HEAD
			s.refuse(w, r)
			return
		}
		values := pathValues(r, route)
		s.record(r.Context().Value(entryKey{}).(*Request), route, values)
		if s.applyFaults(w, r, route, values) || s.rateLimited(w) {
			return
		}
		if route != RouteToken {
			if !s.validManagementToken(r.Header.Get("Authorization")) {
				unauthorized(w)
				return
			}
			// The spec asks it of every request but the token one, bodiless
			// GET and DELETE included; the SDK always sends it.
			if !isJSON(r.Header.Get("Content-Type")) {
				validationError(w, "Content-Type must be application/json")
				return
			}
		}
		serve(w, r)
	})
}

// serveHTTP is the whole fake: it logs the request, strips the path
// prefix and lets the mux route the request.
func (s *service) serveHTTP(w http.ResponseWriter, r *http.Request) {
	e, body := receive(r)
	in, ok := s.below(r)
	if !ok {
		s.record(e, "", nil)
		writeError(w, http.StatusNotFound, reasonNoRoute, "no endpoint at "+r.URL.EscapedPath())
		return
	}
	s.mux.ServeHTTP(w, withEntry(in, e, body))
}

// refuse logs and answers a request that reached no endpoint: 405 with an
// Allow header when the path has endpoints for other methods, 404
// otherwise.
func (s *service) refuse(w http.ResponseWriter, in *http.Request) {
	e := in.Context().Value(entryKey{}).(*Request)
	s.record(e, "", nil)
	allow := s.allowedMethods(in)
	if len(allow) == 0 {
		writeError(w, http.StatusNotFound, reasonNoRoute, "no endpoint at "+e.Path)
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeError(w, http.StatusMethodNotAllowed, reasonNoSuchMethod, "method "+in.Method+" is not allowed at "+e.Path)
}

// Reset empties the server as if it were new: Users, Things, management
// and End User tokens, page links, pending faults, request counts and the
// log. Its options and credentials stay, and so does Client: its cached
// management token is refused once (401), and it fetches a new one, as
// after ExpireTokens. Requests under way go on against the emptied server.
func (s *service) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

// reset empties the state. s.mu must be held (or s unshared).
func (s *service) reset() {
	s.store = newStore()
	s.tokens = make(map[string]time.Time)
	s.endUsers = make(map[string]string)
	s.endUsersIssued = 0
	s.snapshots = make(map[string]*snapshot)
	s.snapshotOrder = nil
	s.faults = faults{}
	s.requests = make(map[Route]int)
	s.log = nil
	s.limited = 0
}

// answer is a response computed under the server's lock: a status and a
// body to encode as JSON (nil: an empty body).
type answer struct {
	status int
	body   any
}

func errorAnswer(status int, reason, message string) answer {
	return answer{status: status, body: apiError{Reason: reason, ErrorMessage: message}}
}

// locked runs f under the server's lock and answers what it returns. The
// answer is encoded before unlocking, because it shares maps and pointers
// with the store, and written after, so that a slow client holds no lock.
func (s *service) locked(w http.ResponseWriter, f func() answer) {
	status, body := s.encodeLocked(f)
	writeBody(w, status, body)
}

// encodeLocked runs f and encodes its answer under the server's lock. The
// deferred unlock keeps the server usable after a panic, which net/http
// recovers from.
func (s *service) encodeLocked(f func() answer) (int, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := f()
	if a.body == nil {
		return a.status, nil
	}
	return a.status, encode(a.body)
}
