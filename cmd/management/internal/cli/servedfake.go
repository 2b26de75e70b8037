package cli

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// The fake as a service: the API exactly as managementtest serves it,
// with a log of what it answered, and beside it the control endpoints
// under /_fake/, a thin JSON layer over managementtest.Server's methods
// for tests written in any language.

// controlPrefix starts the path of every control endpoint: outside the
// API's prefix, so that no API path is taken.
const controlPrefix = "/_fake/"

// maxControlBody bounds a control request's body (413 beyond).
const maxControlBody = 1 << 20

// maxRequestLog is how many API requests GET /_fake/requests keeps, as
// managementtest's Log does: the most recent.
const maxRequestLog = 10000

// servedFake serves one managementtest.Server over HTTP, with its
// control endpoints.
type servedFake struct {
	srv    *managementtest.Server
	start  fakeData // what reset restores
	api    http.Handler
	log    *requestLog
	prefix string // the API's path prefix, escaped

	// mu serializes the control requests, so that a reset and its reseeding
	// happen as one, between the others.
	mu sync.Mutex
}

// newServedFake serves srv, which holds start, and logs its API
// requests to debug when not nil.
func newServedFake(srv *managementtest.Server, start fakeData, debug *slog.Logger) *servedFake {
	s := &servedFake{
		srv:    srv,
		start:  start,
		log:    &requestLog{debug: debug},
		prefix: (&url.URL{Path: managementtest.DefaultPathPrefix}).EscapedPath(),
	}
	s.api = s.log.wrap(srv.Handler(), s.routeOf)
	return s
}

// ServeHTTP sends the control requests to their endpoints and the rest to
// the API.
func (s *servedFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, controlPrefix) || r.URL.Path == strings.TrimSuffix(controlPrefix, "/") {
		s.control(w, r)
		return
	}
	s.api.ServeHTTP(w, r)
}

// controlEndpoint answers one control request from its body; it returns
// the status and what to send as JSON (nil: no body).
type controlEndpoint func(s *servedFake, body []byte) (int, any)

// controlEndpoints are the control endpoints, by method and path.
var controlEndpoints = map[string]controlEndpoint{
	"POST /_fake/end-user-tokens":        (*servedFake).issueToken,
	"POST /_fake/end-user-tokens/revoke": (*servedFake).revokeToken,
	"POST /_fake/faults":                 (*servedFake).addFault,
	"DELETE /_fake/faults":               (*servedFake).clearFaults,
	"POST /_fake/expire-tokens":          (*servedFake).expireTokens,
	"POST /_fake/users":                  (*servedFake).addUser,
	"POST /_fake/things":                 (*servedFake).addThing,
	"GET /_fake/requests":                (*servedFake).requests,
	"POST /_fake/reset":                  (*servedFake).reset,
}

// controlError is the body of a refused control request.
type controlError struct {
	Error string `json:"error"`
}

func refused(status int, format string, args ...any) (int, any) {
	return status, controlError{fmt.Sprintf(format, args...)}
}

// control checks a control request's credentials and body, then lets its
// endpoint answer.
func (s *servedFake) control(w http.ResponseWriter, r *http.Request) {
	status, body := s.answerControl(w, r)
	if body == nil {
		w.WriteHeader(status)
		return
	}
	data, err := json.Marshal(body)
	if err != nil { // the answers are the fake's own values: it would be a defect
		status, data = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

func (s *servedFake) answerControl(w http.ResponseWriter, r *http.Request) (int, any) {
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="management fake", charset="UTF-8"`)
		return refused(http.StatusUnauthorized, "the control endpoints take the Basic credentials of the client fake serve printed (MANAGEMENT_CLIENT_ID and MANAGEMENT_CLIENT_SECRET)")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxControlBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return refused(http.StatusRequestEntityTooLarge, "the body is larger than %d bytes (1 MiB)", maxControlBody)
	case err != nil:
		return refused(http.StatusBadRequest, "reading the body: %v", err)
	}
	key := r.Method + " " + r.URL.Path
	endpoint, ok := controlEndpoints[key]
	if !ok {
		return refused(http.StatusBadRequest, "no control endpoint %s; the control endpoints are %s", key, strings.Join(slices.Sorted(maps.Keys(controlEndpoints)), ", "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return endpoint(s, body)
}

// authorized reports whether r carries the client's Basic credentials,
// compared in constant time.
func (s *servedFake) authorized(r *http.Request) bool {
	id, secret, ok := r.BasicAuth()
	idOK := subtle.ConstantTimeCompare([]byte(id), []byte(s.srv.ClientID))
	secretOK := subtle.ConstantTimeCompare([]byte(secret), []byte(s.srv.ClientSecret))
	return ok && idOK&secretOK == 1
}

// decodeControl decodes a control request's body into v: one JSON object,
// with no member v lacks (a misspelt member is refused, not ignored), and
// numbers kept as written. want describes the body, for the messages.
func decodeControl(body []byte, v any, want string) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return fmt.Errorf("the body is empty; want %s", want)
	}
	if body[0] != '{' {
		return fmt.Errorf("the body is not a JSON object; want %s", want)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the body is not %s: %v", want, strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("the body holds more than one JSON value; want %s", want)
	}
	return nil
}

// issueToken answers POST /_fake/end-user-tokens: IssueEndUserToken.
func (s *servedFake) issueToken(body []byte) (int, any) {
	var req struct {
		UserID string `json:"user_id"`
	}
	if err := decodeControl(body, &req, `{"user_id": "..."}`); err != nil {
		return refused(http.StatusBadRequest, "%v", err)
	}
	if req.UserID == "" {
		return refused(http.StatusBadRequest, "user_id is missing or empty")
	}
	if _, ok := s.srv.User(req.UserID); !ok {
		return refused(http.StatusNotFound, "no User %q", req.UserID)
	}
	var tok string
	if err := try(func() { tok = s.srv.IssueEndUserToken(req.UserID) }); err != nil {
		return refused(http.StatusNotFound, "%v", err)
	}
	return http.StatusCreated, struct {
		AccessToken string `json:"access_token"`
	}{tok}
}

// revokeToken answers POST /_fake/end-user-tokens/revoke:
// RevokeEndUserToken. The token is never quoted back.
func (s *servedFake) revokeToken(body []byte) (int, any) {
	var req struct {
		AccessToken string `json:"access_token"`
	}
	if err := decodeControl(body, &req, `{"access_token": "..."}`); err != nil {
		return refused(http.StatusBadRequest, "%v", err)
	}
	// The bare token, as issued; with the scheme an End User sends before
	// it, the same token (tokens hold no space).
	tok := req.AccessToken
	if scheme, rest, ok := strings.Cut(tok, " "); ok && strings.EqualFold(scheme, "Bearer") {
		tok = rest
	}
	if tok == "" {
		return refused(http.StatusBadRequest, "access_token is missing or empty")
	}
	if err := try(func() { s.srv.RevokeEndUserToken(tok) }); err != nil {
		return refused(http.StatusNotFound, "the access_token is not a live token of this fake: never issued, revoked already, or issued before a reset")
	}
	return http.StatusNoContent, nil
}

// faultRequest is the body of POST /_fake/faults.
type faultRequest struct {
	Route      string  `json:"route"`
	Count      *int    `json:"count"`
	Status     *int    `json:"status"`
	RetryAfter *string `json:"retry_after"`
	Delay      *string `json:"delay"`
}

const faultBody = `{"route": "<a route>", "count": N, "status": S, "retry_after": "2s"} or {"route": "<a route>", "count": N, "delay": "5s"}`

// apiRoutes are the routes a fault may name: managementtest's Route
// constants, in the spec's order.
var apiRoutes = []managementtest.Route{
	managementtest.RouteToken,
	managementtest.RouteListUsers,
	managementtest.RouteGetUser,
	managementtest.RouteAssociate,
	managementtest.RouteDisassociate,
	managementtest.RouteListThings,
	managementtest.RouteGetThing,
	managementtest.RouteUpdateThing,
	managementtest.RouteAuthenticate,
}

// routeNames returns the routes a fault may name, each after indent.
func routeNames(indent string) []string {
	names := make([]string, len(apiRoutes))
	for i, r := range apiRoutes {
		names[i] = indent + string(r)
	}
	return names
}

// addFault answers POST /_fake/faults: FailNext with a status (an
// answer of 200 to 399 is injected with FailNextWith, in the route's
// error shape), DelayNext with a delay, both with both (a slow failure).
func (s *servedFake) addFault(body []byte) (int, any) {
	var req faultRequest
	if err := decodeControl(body, &req, faultBody); err != nil {
		return refused(http.StatusBadRequest, "%v", err)
	}
	route := managementtest.Route(req.Route)
	if !slices.Contains(apiRoutes, route) {
		return refused(http.StatusBadRequest, "unknown route %q; the routes are %s", req.Route, strings.Join(routeNames(""), ", "))
	}
	count := 1
	if req.Count != nil {
		count = *req.Count
	}
	if count < 1 {
		return refused(http.StatusBadRequest, "count is %d; it must be at least 1 (leave it out for 1)", count)
	}
	if req.Status == nil && req.Delay == nil {
		return refused(http.StatusBadRequest, "the fault has neither a status nor a delay; want %s", faultBody)
	}
	retryAfter, err := parseDuration("retry_after", req.RetryAfter, false)
	if err != nil {
		return refused(http.StatusBadRequest, "%v", err)
	}
	delay, err := parseDuration("delay", req.Delay, true)
	if err != nil {
		return refused(http.StatusBadRequest, "%v", err)
	}
	if req.RetryAfter != nil && req.Status == nil {
		return refused(http.StatusBadRequest, "retry_after comes with a status")
	}
	if req.Status != nil {
		switch st := *req.Status; {
		case st < 100 || st > 599:
			return refused(http.StatusBadRequest, "status %d is outside 100 to 599", st)
		case st < 200:
			return refused(http.StatusBadRequest, "status %d is informational: no answer ends with one; give 200 to 599", st)
		}
	}
	if delay > 0 {
		s.srv.DelayNext(route, count, delay)
	}
	if req.Status != nil {
		s.failNext(route, count, *req.Status, retryAfter)
	}
	return http.StatusNoContent, nil
}

// failNext is FailNext for an error status (400 to 599), and for another
// the answer FailNext would give one: the route's error shape (the token
// endpoint's {error, error_description}, the others' {reason,
// error_message}; no body for 204 and 304), and the Retry-After rounded up
// to whole seconds.
func (s *servedFake) failNext(route managementtest.Route, n, status int, retryAfter time.Duration) {
	if status >= 400 {
		s.srv.FailNext(route, n, status, retryAfter)
		return
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if retryAfter > 0 {
		h.Set("Retry-After", fmt.Sprint(int64((retryAfter+time.Second-1)/time.Second)))
	}
	resp := managementtest.Response{Status: status, Header: h}
	switch {
	case status == http.StatusNoContent || status == http.StatusNotModified:
	case route == managementtest.RouteToken:
		resp.Body = `{"error":"temporarily_unavailable","error_description":"managementtest: injected answer"}`
	default:
		resp.Body = `{"reason":"MANAGEMENTTEST.INJECTED_FAULT","error_message":"managementtest: injected answer"}`
	}
	s.srv.FailNextWith(route, n, resp)
}

// parseDuration parses the Go duration of the member name, when given:
// not negative, and above zero when positive is set.
func parseDuration(name string, v *string, positive bool) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	d, err := time.ParseDuration(*v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s %q is not a Go duration such as \"2s\" or \"150ms\"", name, *v)
	case d < 0:
		return 0, fmt.Errorf("%s %q is negative", name, *v)
	case positive && d == 0:
		return 0, fmt.Errorf("%s %q is zero; leave it out for no delay", name, *v)
	}
	return d, nil
}

// clearFaults answers DELETE /_fake/faults: ClearFaults.
func (s *servedFake) clearFaults([]byte) (int, any) {
	s.srv.ClearFaults()
	return http.StatusNoContent, nil
}

// expireTokens answers POST /_fake/expire-tokens: ExpireTokens.
func (s *servedFake) expireTokens([]byte) (int, any) {
	s.srv.ExpireTokens()
	return http.StatusNoContent, nil
}

// addUser answers POST /_fake/users: AddUser, then the User as the API
// reads it.
func (s *servedFake) addUser(body []byte) (int, any) {
	var u management.UserDetails
	if err := decodeControl(body, &u, "a User as the API reads it (the spec's SingleUser)"); err != nil {
		return refused(http.StatusBadRequest, "%v", err)
	}
	if u.ID == "" {
		return refused(http.StatusBadRequest, "id is missing or empty")
	}
	if _, ok := s.srv.User(u.ID); ok {
		return refused(http.StatusConflict, "User %q exists already", u.ID)
	}
	for _, a := range u.AssociatedThings {
		if _, ok := s.srv.Thing(a.PhysicalID); !ok {
			return refused(http.StatusBadRequest, "associated_things: no Thing %q; add it first with POST /_fake/things", a.PhysicalID)
		}
	}
	if err := try(func() { s.srv.AddUser(u) }); err != nil {
		return refused(http.StatusBadRequest, "%v", err)
	}
	added, _ := s.srv.User(u.ID)
	return http.StatusCreated, added
}

// addThing answers POST /_fake/things: AddThing, then the Thing as the
// API reads it.
func (s *servedFake) addThing(body []byte) (int, any) {
	var t management.ThingDetails
	if err := decodeControl(body, &t, "a Thing as the API reads it (the spec's SingleThing)"); err != nil {
		return refused(http.StatusBadRequest, "%v", err)
	}
	if t.PhysicalID == "" {
		return refused(http.StatusBadRequest, "physical_id is missing or empty")
	}
	if _, ok := s.srv.Thing(t.PhysicalID); ok {
		return refused(http.StatusConflict, "Thing %q exists already", t.PhysicalID)
	}
	for _, a := range t.AssociatedUsers {
		if _, ok := s.srv.User(a.ID); !ok {
			return refused(http.StatusBadRequest, "associated_users: no User %q; add it first with POST /_fake/users", a.ID)
		}
	}
	if err := try(func() { s.srv.AddThing(t) }); err != nil {
		return refused(http.StatusBadRequest, "%v", err)
	}
	added, _ := s.srv.Thing(t.PhysicalID)
	return http.StatusCreated, added
}

// try calls f, which calls one of managementtest's methods that panic on
// misuse, as test helpers do (a repeated status name, an anonymous User
// with an email, a token never issued), and returns the panic as an
// error. Those methods check before they change anything, and unlock as
// they panic.
func try(f func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			msg := strings.TrimPrefix(fmt.Sprint(v), "managementtest: ")
			if _, rest, ok := strings.Cut(msg, "): "); ok { // `AddUser("u-1"): ...`
				msg = rest
			}
			err = errors.New(msg)
		}
	}()
	f()
	return nil
}

// requests answers GET /_fake/requests: the log of API requests.
func (s *servedFake) requests([]byte) (int, any) {
	return http.StatusOK, s.log.entries()
}

// reset answers POST /_fake/reset: Reset, then the starting data again.
func (s *servedFake) reset([]byte) (int, any) {
	s.srv.Reset()
	s.start.seed(s.srv)
	s.log.clear()
	return http.StatusNoContent, nil
}

// routeOf returns the route of an API request, as managementtest routes
// it: the path below the prefix, segment by segment against each
// route's, the method exactly (no HEAD for GET); "" for none.
func (s *servedFake) routeOf(r *http.Request) string {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), s.prefix)
	if !ok || !strings.HasPrefix(rest, "/") {
		return ""
	}
	segs := strings.Split(rest[1:], "/")
	for _, route := range apiRoutes {
		method, path, _ := strings.Cut(string(route), " ")
		if method == r.Method && matches(strings.Split(path[1:], "/"), segs) {
			return string(route)
		}
	}
	return ""
}

// matches reports whether the escaped segments of a path match a route's
// segments: literals equal once unescaped, each {name} one segment that is
// not empty.
func matches(pattern, segs []string) bool {
	if len(pattern) != len(segs) {
		return false
	}
	for i, p := range pattern {
		seg, err := url.PathUnescape(segs[i])
		if err != nil || seg == "" {
			return false
		}
		if !strings.HasPrefix(p, "{") && seg != p {
			return false
		}
	}
	return true
}

// loggedRequest is one entry of GET /_fake/requests. It holds no header,
// no query and no body, so no credential.
type loggedRequest struct {
	Method string `json:"method"`
	Route  string `json:"route"`  // the managementtest.Route; "" when the request reached no endpoint
	Path   string `json:"path"`   // as sent (escaped), with the prefix
	Status int    `json:"status"` // 0 when no answer was sent (the client left during a delay)
	Time   string `json:"time"`   // when it was received: RFC 3339, UTC, milliseconds

	received time.Time
}

// timeFormat is RFC 3339 with milliseconds.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// requestLog keeps the most recent API requests and their answers.
type requestLog struct {
	debug *slog.Logger // nil: no log on standard error

	mu   sync.Mutex
	list []loggedRequest // in the order answered
}

// wrap returns h with every request it answers logged, its route given
// by route.
func (l *requestLog) wrap(h http.Handler, route func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := loggedRequest{Method: r.Method, Route: route(r), Path: r.URL.EscapedPath(), received: time.Now()}
		sw := &statusWriter{ResponseWriter: w}
		defer func() { // also when the handler aborts (http.ErrAbortHandler)
			e.Status = sw.status
			l.add(e)
		}()
		h.ServeHTTP(sw, r)
	})
}

func (l *requestLog) add(e loggedRequest) {
	e.Time = e.received.UTC().Format(timeFormat)
	l.mu.Lock()
	if len(l.list) == maxRequestLog {
		l.list = l.list[1:]
	}
	l.list = append(l.list, e)
	l.mu.Unlock()
	if l.debug != nil {
		l.debug.Debug("request", "method", e.Method, "route", e.Route, "path", e.Path, "status", e.Status)
	}
}

// entries returns the log oldest first, by the time each request was
// received; never nil, so that it encodes as [].
func (l *requestLog) entries() []loggedRequest {
	l.mu.Lock()
	list := slices.Clone(l.list)
	l.mu.Unlock()
	if list == nil {
		list = []loggedRequest{}
	}
	slices.SortStableFunc(list, func(a, b loggedRequest) int { return a.received.Compare(b.received) })
	return list
}

func (l *requestLog) clear() {
	l.mu.Lock()
	l.list = nil
	l.mu.Unlock()
}

// statusWriter records the status of an answer. Unwrap lets
// http.ResponseController reach the connection beneath, which
// managementtest hijacks to cut an answer short.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the first final status (an informational 1xx is
// not the answer's) and passes code on.
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records 200 when nothing set a status first, as net/http answers
// then, and passes b on.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the writer beneath, for http.ResponseController: the
// fake hijacks its connection to cut an answer short.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
