package peers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The wire constants the loopback server and the three clients share.
const (
	prefix        = "/v2/api/management/service_connect"
	tokenPath     = prefix + "/auth/token"
	clientID      = "peer-client"
	clientSecret  = "peer-secret-Zq81"
	endUserHeader = "Bearer eu-peer-1"
	userID        = "usr-00000042"
	pageSize      = 100
	wireTime      = "2006-01-02T15:04:05.000Z"
)

// response is a pre-encoded answer: the server only copies bytes, so its
// cost per request is small and the same for every client, as in
// internal/benchmark.
type response struct {
	status int
	body   []byte
	length []string
}

func newResponse(status int, body string) response {
	return response{status: status, body: []byte(body), length: []string{strconv.Itoa(len(body))}}
}

var (
	jsonType     = []string{"application/json"}
	unauthorized = newResponse(http.StatusUnauthorized, `{"reason":"AUTH.UNAUTHORIZED","error_message":""}`)
	notFound     = newResponse(http.StatusNotFound, `{"reason":"COMMON.ENTITY_NOT_FOUND","error_message":"User usr-missing was not found"}`)
	badPage      = newResponse(http.StatusBadRequest, `{"reason":"COMMON.REQUEST_VALIDATION","error_message":"page is not valid"}`)
	badGrant     = newResponse(http.StatusBadRequest, `{"error":"unsupported_grant_type","error_description":"grant_type must be client_credentials"}`)
	badClient    = newResponse(http.StatusUnauthorized, `{"error":"invalid_client","error_description":"Client authentication failed"}`)
	authAnswer   = newResponse(http.StatusOK, `{"is_token_valid":true,"user_id":"usr-00000042","user_role":"APPUSER","to_client_response":null}`)
)

// server is the one loopback service the three clients call in the same
// process. It checks what the spec asks of a request (Basic credentials
// and a JSON grant on the token endpoint, the current Bearer token
// elsewhere) and answers from pre-encoded bodies. A probe may set fault,
// which sees every request first and answers it when it returns true.
type server struct {
	*httptest.Server
	tokenRequests atomic.Int64
	authCalls     atomic.Int64
	apiCalls      atomic.Int64 // every request but the token endpoint's

	lifetime   int                      // expires_in, seconds
	generation atomic.Int64             // the token issued last is "peer-token-<generation>"
	current    atomic.Pointer[string]   // "Bearer peer-token-<generation>"; nil before the first
	token      atomic.Pointer[response] // the token endpoint's answer for the current generation
	fault      atomic.Pointer[func(http.ResponseWriter, *http.Request) bool]

	user  response
	pages []response // pages[i] starts at User i*pageSize
}

// readUser returns internal/benchmark's User (testdata/user.json there), so
// that the three columns read what the SDK's own benchmarks read.
func readUser(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("../testdata/user.json")
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// newServer starts a server of users generated Users whose tokens live
// lifetime; it is closed when tb ends.
func newServer(tb testing.TB, users int, lifetime time.Duration) *server {
	tb.Helper()
	s := &server{lifetime: int(lifetime / time.Second), user: newResponse(http.StatusOK, string(readUser(tb))), pages: encodePages(tb, users)}
	s.rotate()
	s.Server = httptest.NewServer(s)
	tb.Cleanup(s.Close)
	return s
}

// rotate issues a new token and makes every earlier one invalid, as a
// revocation on the service's side would.
func (s *server) rotate() {
	n := s.generation.Add(1)
	tok := "peer-token-" + strconv.FormatInt(n, 10)
	r := newResponse(http.StatusOK, fmt.Sprintf(`{"access_token":%q,"token_type":"Bearer","expires_in":%d}`, tok, s.lifetime))
	s.token.Store(&r)
	header := "Bearer " + tok
	s.current.Store(&header)
}

// setFault installs f (nil: none) ahead of the normal answers.
func (s *server) setFault(f func(http.ResponseWriter, *http.Request) bool) {
	if f == nil {
		s.fault.Store(nil)
		return
	}
	s.fault.Store(&f)
}

var basicAuth = "Basic " + base64.StdEncoding.EncodeToString([]byte(clientID+":"+clientSecret))

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f := s.fault.Load(); f != nil && (*f)(w, r) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		reply(w, notFound)
		return
	}
	if rest == "/auth/token" && r.Method == http.MethodPost {
		s.tokenRequests.Add(1)
		reply(w, s.issue(r))
		return
	}
	s.apiCalls.Add(1)
	if r.Header.Get("Authorization") != *s.current.Load() {
		reply(w, unauthorized)
		return
	}
	switch {
	case rest == "/users" && r.Method == http.MethodGet:
		reply(w, s.page(r.URL.RawQuery))
	case rest == "/users/"+userID && r.Method == http.MethodGet:
		reply(w, s.user)
	case rest == "/authenticate" && r.Method == http.MethodPost:
		_, _ = io.Copy(io.Discard, r.Body)
		s.authCalls.Add(1)
		reply(w, authAnswer)
	default:
		reply(w, notFound)
	}
}

// issue answers the token endpoint: Basic credentials, and a JSON body
// {"grant_type":"client_credentials"}, as the spec says. A form body (what
// OAuth 2.0 clients send) has no JSON grant_type.
func (s *server) issue(r *http.Request) response {
	if r.Header.Get("Authorization") != basicAuth {
		return badClient
	}
	var grant struct {
		GrantType string `json:"grant_type"`
	}
	if json.NewDecoder(io.LimitReader(r.Body, 1<<10)).Decode(&grant) != nil || grant.GrantType != "client_credentials" {
		return badGrant
	}
	return *s.token.Load()
}

// page answers GET /users: the first page without a query, else page=<offset>.
func (s *server) page(rawQuery string) response {
	offset := 0
	if rawQuery != "" {
		v, ok := strings.CutPrefix(rawQuery, "page=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 || n%pageSize != 0 || n/pageSize >= len(s.pages) {
			return badPage
		}
		offset = n
	}
	if len(s.pages) == 0 {
		return newResponse(http.StatusOK, `{"users":[],"next_page":null}`)
	}
	return s.pages[offset/pageSize]
}

func reply(w http.ResponseWriter, resp response) {
	h := w.Header()
	h["Content-Type"] = jsonType
	h["Content-Length"] = resp.length
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

// wireUser is a User as the server encodes it.
type wireUser struct {
	ID        string  `json:"id"`
	Email     *string `json:"email"`
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
	CreatedAt string  `json:"created_at"`
	UpdatedAt string  `json:"updated_at"`
}

var (
	firstNames = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Ken", "Margaret", "Dennis"}
	lastNames  = []string{"Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Thompson", "Hamilton", "Ritchie"}
)

// genUser is User i of the generated data set (internal/benchmark's);
// every tenth is anonymous.
func genUser(i int) wireUser {
	created := time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7919 * time.Millisecond)
	u := wireUser{
		ID:        fmt.Sprintf("usr-%08d", i),
		CreatedAt: created.Format(wireTime),
		UpdatedAt: created.Add(time.Duration(i%977) * time.Hour).Add(321 * time.Millisecond).Format(wireTime),
	}
	if i%10 != 9 {
		email := fmt.Sprintf("user%d@example.com", i)
		first, last := firstNames[i%len(firstNames)], lastNames[(i/len(firstNames))%len(lastNames)]
		u.Email, u.FirstName, u.LastName = &email, &first, &last
	}
	return u
}

// encodePages encodes n Users in pages of pageSize, linked by next_page.
func encodePages(tb testing.TB, n int) []response {
	tb.Helper()
	var pages []response
	for offset := 0; offset < n; offset += pageSize {
		var p struct {
			Users    []wireUser `json:"users"`
			NextPage *string    `json:"next_page"`
		}
		for i := offset; i < min(offset+pageSize, n); i++ {
			p.Users = append(p.Users, genUser(i))
		}
		if next := offset + pageSize; next < n {
			link := prefix + "/users?page=" + strconv.Itoa(next)
			p.NextPage = &link
		}
		body, err := json.Marshal(p)
		if err != nil {
			tb.Fatalf("encoding page %d: %v", offset, err)
		}
		pages = append(pages, newResponse(http.StatusOK, string(body)))
	}
	return pages
}
