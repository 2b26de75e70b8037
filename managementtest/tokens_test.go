package managementtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// Tokens of 5 bytes that are not English words: shorter than the SDK
// searches for anywhere, as users' own tests choose them.
const (
	shortMgmt   = "qzx7k"
	shortEU     = "vbn4w"
	shortEU2    = "plm9r"
	shortSecret = "s3kq9"
)

// authorizations records the Authorization headers a client sends.
type authorizations struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (a *authorizations) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.seen = append(a.seen, r.Header.Get("Authorization"))
	a.mu.Unlock()
	return a.next.RoundTrip(r)
}

// WithManagementToken and WithEndUserTokens set the tokens the server
// issues; IssueEndUserToken hands out the End User ones in order, panics
// once all are issued, and starts again after Reset.
func TestWithTokens(t *testing.T) {
	srv := managementtest.NewServer(managementtest.WithManagementToken(shortMgmt), managementtest.WithEndUserTokens(shortEU, shortEU2))
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	cfg := srv.Config()
	rec := &authorizations{next: cfg.HTTPClient.Transport}
	cfg.HTTPClient = &http.Client{Transport: rec}
	c, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Users.Get(context.Background(), "u-1"); err != nil {
		t.Fatal(err)
	}
	if got := rec.seen[len(rec.seen)-1]; got != "Bearer "+shortMgmt {
		t.Errorf("Authorization %q, want the chosen token", got)
	}
	auth, err := c.Authenticate(context.Background(), "Bearer "+shortMgmt)
	if err != nil || !auth.Valid || auth.Role != management.RoleServiceAccount {
		t.Errorf("the chosen management token is not a live one: %+v, %v", auth, err)
	}
	issue := func() (tok string, panicked any) {
		defer func() { panicked = recover() }()
		return srv.IssueEndUserToken("u-1"), nil
	}
	for _, want := range []string{shortEU, shortEU2} {
		if got, p := issue(); got != want || p != nil {
			t.Errorf("IssueEndUserToken = %q (panic %v), want %q", got, p, want)
		}
	}
	if _, p := issue(); p == nil || !strings.Contains(p.(string), "were all issued") {
		t.Errorf("a third IssueEndUserToken: panic %v, want one saying they were all issued", p)
	}
	srv.Reset()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	if got, _ := issue(); got != shortEU {
		t.Errorf("after Reset, IssueEndUserToken = %q, want %q", got, shortEU)
	}
}

func TestWithTokensRefusesNonsense(t *testing.T) {
	for name, f := range map[string]func(){
		"empty management token":  func() { managementtest.WithManagementToken("") },
		"management token, space": func() { managementtest.WithManagementToken("a b") },
		"End User token, control": func() { managementtest.WithEndUserTokens("ok", "a\nb") },
		"End User token twice":    func() { managementtest.WithEndUserTokens("abc", "abc") },
		"one token for both": func() {
			managementtest.NewServer(managementtest.WithManagementToken("abc"), managementtest.WithEndUserTokens("abc"))
		},
		"an empty End User token":   func() { managementtest.WithEndUserTokens("") },
		"management token, DEL":     func() { managementtest.WithManagementToken("a\x7f") },
		"End User token with a tab": func() { managementtest.WithEndUserTokens("a\tb") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// With 5-byte tokens and secret, the service's messages, bodies and hints
// reach the caller, the tokens redacted where they stand alone.
func TestShortTokensKeepTheServicesTexts(t *testing.T) {
	srv, _ := mtSDK(t, managementtest.WithManagementToken(shortMgmt), managementtest.WithCredentials("ci-1", shortSecret))
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	cfg := srv.Config()
	cfg.MaxRetries = -1 // each fault is the answer
	c, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	_, err = c.Users.Get(ctx, "u-9")
	if !errors.Is(err, management.ErrNotFound) || !strings.HasSuffix(err.Error(), ": User u-9 was not found") {
		t.Errorf("a 404: %v; want the service's message", err)
	}

	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Status: http.StatusBadGateway,
		Header: http.Header{"Content-Type": {"text/html"}}, Body: "<html>Bad Gateway: the token qzx7k timed out (qzx7kq)</html>"})
	_, err = c.Users.Get(ctx, "u-1")
	var ae *management.APIError
	if !errors.As(err, &ae) || string(ae.Body) != "<html>Bad Gateway: the token REDACTED timed out (qzx7kq)</html>" {
		t.Errorf("a 502: %#v; want its body, the token redacted", err)
	}

	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Status: http.StatusFound,
		Header: http.Header{"Location": {"/login/" + shortMgmt + "?next=/users"}}})
	_, err = c.Users.Get(ctx, "u-1")
	if want := "redirect to /login/REDACTED not followed; check Config.BaseURL and Config.PathPrefix"; !errors.Is(err, management.ErrMisconfigured) || !strings.Contains(err.Error(), want) {
		t.Errorf("a redirect: %v; want it to say %q", err, want)
	}

	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Status: http.StatusBadRequest,
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: "refused for qzx7k, sorry", Cut: true, CutAfter: len("refused for qzx")})
	_, err = c.Users.Get(ctx, "u-1")
	if !errors.As(err, &ae) || string(ae.Body) != "refused for REDACTED" {
		t.Errorf("a body cut mid-token: %#v; want its start, the token's start redacted", err)
	}

	srv.FailNextWith(managementtest.RouteToken, 1, managementtest.Response{Status: http.StatusOK, Body: "<html>Sign in</html>"})
	srv.ExpireTokens()
	_, err = c.Users.Get(ctx, "u-1")
	if !errors.Is(err, management.ErrMisconfigured) || !strings.Contains(err.Error(), "check Config.BaseURL") {
		t.Errorf("a token endpoint answering an HTML page without Content-Type: %v; want ErrMisconfigured and the hint", err)
	}
}

// The middleware relays the service's answer for a short End User token,
// and lets a valid one through.
func TestShortEndUserTokensAreJudgedAndRelayed(t *testing.T) {
	srv, c := mtSDK(t, managementtest.WithManagementToken(shortMgmt), managementtest.WithEndUserTokens(shortEU))
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	tok := srv.IssueEndUserToken("u-1")
	a := &management.Authenticator{Client: c}
	h := a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := management.EndUserFromContext(r.Context())
		_, _ = w.Write([]byte(u.ID))
	}))
	serve := func(header string) (int, string) {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		r.Header.Set("Authorization", header)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	if code, body := serve("Bearer " + tok); code != 200 || body != "u-1" {
		t.Errorf("a valid short token: %d %q", code, body)
	}
	srv.RevokeEndUserToken(tok)
	_ = a.Forget(context.Background(), "Bearer "+tok)
	code, body := serve("Bearer " + tok)
	var got map[string]any
	_ = json.Unmarshal([]byte(body), &got)
	want := map[string]any{"error_code": 401.0, "reason": "auth.unauthorized", "error_message": "The access token is invalid or has expired"}
	if diff := cmp.Diff(want, got); code != 401 || diff != "" {
		t.Errorf("a revoked short token: %d, body (-want +got):\n%s", code, diff)
	}
}

// A Server prints as its String whatever the verb, %d and %t too: never
// its secret or the tokens it issued, and without reading its state while
// it serves (go test -race).
func TestServerFormatsAsItsString(t *testing.T) {
	srv := managementtest.NewServer(managementtest.WithCredentials("ci-print", "secret-never-printed"), managementtest.WithManagementToken("tok-never-printed"))
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	c := srv.Client()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
				_, _ = c.Users.Get(context.Background(), "u-1")
			}
		}
	})
	want := `managementtest.Server{URL:"` + srv.URL + `"}`
	for _, verb := range "vsqdtxXobeEfFgGcU" {
		for _, flags := range []string{"", "+", "#", "-", " ", "0"} {
			format := "%" + flags + string(verb)
			got := fmt.Sprintf(format, srv)
			switch {
			case strings.Contains(got, "never-printed"):
				t.Errorf("%s shows a credential: %s", format, got)
			case verb == 'q' && got != strconv.Quote(want), verb != 'q' && got != want:
				t.Errorf("%s = %q, want %q", format, got, want)
			}
		}
	}
	close(done)
	wg.Wait()
}
