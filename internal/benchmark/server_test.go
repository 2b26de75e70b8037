package benchmark

import (
	"bytes"
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

// The wire constants the loopback server and the baseline share with the SDK's defaults.
const (
	benchPrefix       = "/v2/api/management/service_connect"
	benchClientID     = "bench-client"
	benchClientSecret = "bench-secret"
	benchAccessToken  = "bench-management-token"
	benchAuthHeader   = "Bearer " + benchAccessToken
	benchEndUserToken = "Bearer eu-bench-1"
	benchUserID       = "usr-00000042"
	benchPageSize     = 100
	benchWireTime     = "2006-01-02T15:04:05.000Z"
)

// benchResponse is a pre-encoded answer: the server only copies bytes, so
// its cost per request is small and the same for the SDK and the baseline.
type benchResponse struct {
	status int
	body   []byte
	length []string // Content-Length, so that no body is chunked
}

func newBenchResponse(status int, body []byte) benchResponse {
	return benchResponse{status: status, body: body, length: []string{strconv.Itoa(len(body))}}
}

var (
	benchJSONType     = []string{"application/json"}
	benchUnauthorized = newBenchResponse(http.StatusUnauthorized, []byte(`{"reason":"AUTH.UNAUTHORIZED","error_message":""}`))
	benchNotFound     = newBenchResponse(http.StatusNotFound, []byte(`{"reason":"COMMON.ENTITY_NOT_FOUND","error_message":"route not found"}`))
	benchBadPage      = newBenchResponse(http.StatusBadRequest, []byte(`{"reason":"COMMON.REQUEST_VALIDATION","error_message":"page is not valid"}`))
)

// benchAuthJSON is the authenticate endpoint's answer for a valid End User token.
const benchAuthJSON = `{"is_token_valid":true,"user_id":"usr-00000042","user_role":"APPUSER","to_client_response":null}`

// benchServer is the loopback service that the SDK and the baseline call in
// the same process. It serves the token endpoint, GET /users/{id}, the
// pages of GET /users and POST /authenticate from pre-encoded bodies.
type benchServer struct {
	*httptest.Server
	tokenRequests atomic.Int64 // POST /auth/token
	authCalls     atomic.Int64 // POST /authenticate

	token benchResponse
	user  benchResponse
	auth  benchResponse
	pages []benchResponse // pages[i] starts at user i*benchPageSize
	users int
}

// readUser returns the User every benchmark reads, testdata/user.json: a
// realistic SingleUser (consents, custom settings of every kind, among
// them an integer above 2^53, and associated Things, one never seen),
// which internal/benchmark/peers reads too.
func readUser(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// newBenchServer starts a server holding users generated Users, whose
// tokens live tokenLifetime (whole seconds on the wire). It is closed
// when tb ends.
func newBenchServer(tb testing.TB, users int, tokenLifetime time.Duration) *benchServer {
	tb.Helper()
	s := &benchServer{
		token: newBenchResponse(http.StatusOK, fmt.Appendf(nil,
			`{"access_token":%q,"token_type":"Bearer","expires_in":%d}`, benchAccessToken, int(tokenLifetime/time.Second))),
		user:  newBenchResponse(http.StatusOK, readUser(tb, "testdata/user.json")),
		auth:  newBenchResponse(http.StatusOK, []byte(benchAuthJSON)),
		pages: benchPages(tb, users),
		users: users,
	}
	s.Server = httptest.NewServer(s)
	tb.Cleanup(s.Close)
	return s
}

// benchPageLink is the next_page link of the page starting at offset.
func benchPageLink(offset int) string {
	return benchPrefix + "/users?page=" + strconv.Itoa(offset)
}

// benchWireUser is a User as the server encodes it.
type benchWireUser struct {
	ID        string  `json:"id"`
	Email     *string `json:"email"`
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
	CreatedAt string  `json:"created_at"`
	UpdatedAt string  `json:"updated_at"`
}

type benchWirePage struct {
	Users    []benchWireUser `json:"users"`
	NextPage *string         `json:"next_page"`
}

var (
	benchFirstNames = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Ken", "Margaret", "Dennis"}
	benchLastNames  = []string{"Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Thompson", "Hamilton", "Ritchie"}
)

// benchGenUser is User i of the generated data set; every tenth is anonymous.
func benchGenUser(i int) benchWireUser {
	created := time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7919 * time.Millisecond)
	u := benchWireUser{
		ID:        fmt.Sprintf("usr-%08d", i),
		CreatedAt: created.Format(benchWireTime),
		UpdatedAt: created.Add(time.Duration(i%977) * time.Hour).Add(321 * time.Millisecond).Format(benchWireTime),
	}
	if i%10 != 9 {
		email := fmt.Sprintf("user%d@example.com", i)
		first, last := benchFirstNames[i%len(benchFirstNames)], benchLastNames[(i/len(benchFirstNames))%len(benchLastNames)]
		u.Email, u.FirstName, u.LastName = &email, &first, &last
	}
	return u
}

// benchPages encodes the data set of n Users in pages of benchPageSize.
func benchPages(tb testing.TB, n int) []benchResponse {
	tb.Helper()
	var pages []benchResponse
	for offset := 0; offset < n; offset += benchPageSize {
		p := benchWirePage{Users: make([]benchWireUser, 0, benchPageSize)}
		for i := offset; i < min(offset+benchPageSize, n); i++ {
			p.Users = append(p.Users, benchGenUser(i))
		}
		if next := offset + benchPageSize; next < n {
			link := benchPageLink(next)
			p.NextPage = &link
		}
		body, err := json.Marshal(p)
		if err != nil {
			tb.Fatalf("encoding page %d: %v", offset, err)
		}
		pages = append(pages, newBenchResponse(http.StatusOK, body))
	}
	return pages
}

func (s *benchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, benchPrefix)
	if !ok {
		benchReply(w, benchNotFound)
		return
	}
	if rest == "/auth/token" && r.Method == http.MethodPost {
		_, _ = io.Copy(io.Discard, r.Body)
		s.tokenRequests.Add(1)
		benchReply(w, s.token)
		return
	}
	if r.Header.Get("Authorization") != benchAuthHeader {
		benchReply(w, benchUnauthorized)
		return
	}
	switch {
	case rest == "/users" && r.Method == http.MethodGet:
		benchReply(w, s.page(r.URL.RawQuery))
	case strings.HasPrefix(rest, "/users/") && r.Method == http.MethodGet:
		benchReply(w, s.user)
	case rest == "/authenticate" && r.Method == http.MethodPost:
		_, _ = io.Copy(io.Discard, r.Body)
		s.authCalls.Add(1)
		benchReply(w, s.auth)
	default:
		benchReply(w, benchNotFound)
	}
}

// page answers GET /users: the first page without a query, else page=<offset>.
func (s *benchServer) page(rawQuery string) benchResponse {
	offset := 0
	if rawQuery != "" {
		v, ok := strings.CutPrefix(rawQuery, "page=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 || n%benchPageSize != 0 || n/benchPageSize >= len(s.pages) {
			return benchBadPage
		}
		offset = n
	}
	if len(s.pages) == 0 {
		return newBenchResponse(http.StatusOK, []byte(`{"users":[],"next_page":null}`))
	}
	return s.pages[offset/benchPageSize]
}

func benchReply(w http.ResponseWriter, resp benchResponse) {
	h := w.Header()
	h["Content-Type"] = benchJSONType
	h["Content-Length"] = resp.length
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}
