package managementtest_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management/managementtest"
)

// Raw HTTP helpers of the fake's tests: net/http only, no SDK, so that the
// fake's own validation is exercised with requests the SDK refuses to send.

const mtPrefix = managementtest.DefaultPathPrefix

// mtConn is a raw HTTP connection to a fake, with a management token.
type mtConn struct {
	t     testing.TB
	srv   *managementtest.Server
	hc    *http.Client
	token string
}

// mtStart starts a fake on loopback, closed at the end of the test.
func mtStart(t testing.TB, opts ...managementtest.Option) *mtConn {
	t.Helper()
	srv := managementtest.NewServer(opts...)
	t.Cleanup(srv.Close)
	return &mtConn{t: t, srv: srv, hc: &http.Client{}}
}

// mtMemory makes an in-memory fake, reached through its Transport (for synctest).
func mtMemory(t testing.TB, opts ...managementtest.Option) *mtConn {
	t.Helper()
	srv := managementtest.NewInMemoryServer(opts...)
	return &mtConn{t: t, srv: srv, hc: &http.Client{Transport: srv.Transport()}}
}

// mtResp is a raw answer.
type mtResp struct {
	status int
	header http.Header
	body   []byte
}

// send makes one request to the server's URL + pathQuery. It fails the
// test at once, so it must run on the test's goroutine; elsewhere use trySend.
func (c *mtConn) send(method, pathQuery string, header map[string]string, body string) mtResp {
	c.t.Helper()
	r, err := c.trySend(method, pathQuery, header, body)
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// trySend is send returning its error, for use off the test's goroutine.
func (c *mtConn) trySend(method, pathQuery string, header map[string]string, body string) (mtResp, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.srv.URL+pathQuery, rd)
	if err != nil {
		return mtResp{}, fmt.Errorf("NewRequest: %v", err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return mtResp{}, fmt.Errorf("%s %s: %v", method, pathQuery, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return mtResp{}, fmt.Errorf("%s %s: reading body: %v", method, pathQuery, err)
	}
	return mtResp{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

func mtBasic(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))
}

// newToken fetches a management token with the server's credentials.
func (c *mtConn) newToken() string {
	c.t.Helper()
	r := c.send("POST", mtPrefix+"/auth/token",
		map[string]string{"Authorization": mtBasic(c.srv.ClientID, c.srv.ClientSecret), "Content-Type": "application/json"},
		`{"grant_type":"client_credentials"}`)
	if r.status != 200 {
		c.t.Fatalf("token: %d %s", r.status, r.body)
	}
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(r.body, &tr); err != nil || tr.AccessToken == "" {
		c.t.Fatalf("token body %s: %v", r.body, err)
	}
	return tr.AccessToken
}

// api sends an authorised JSON request to a path below the prefix.
func (c *mtConn) api(method, path, body string) mtResp {
	c.t.Helper()
	return c.follow(method, mtPrefix+path, body)
}

// follow sends an authorised JSON request to a path that already holds
// the prefix, such as a next_page link.
func (c *mtConn) follow(method, pathQuery, body string) mtResp {
	c.t.Helper()
	if c.token == "" {
		c.token = c.newToken()
	}
	return c.send(method, pathQuery, c.apiHeader(), body)
}

// apiHeader is the header of an authorised JSON request. c.token must be set.
func (c *mtConn) apiHeader() map[string]string {
	return map[string]string{"Authorization": "Bearer " + c.token, "Content-Type": "application/json"}
}

// json decodes a JSON answer, after checking its Content-Type.
func (r mtResp) json(t testing.TB) any {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json (status %d, body %s)", ct, r.status, r.body)
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.body, err)
	}
	return v
}

// mtJSON decodes a JSON literal for comparison.
func mtJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON literal %s: %v", s, err)
	}
	return v
}

// want checks the status and the whole JSON body.
func (r mtResp) want(t testing.TB, status int, body string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	if diff := cmp.Diff(mtJSON(t, body), r.json(t)); diff != "" {
		t.Fatalf("body mismatch (-want +got):\n%s", diff)
	}
}

// wantError checks a {reason, error_message} answer.
func (r mtResp) wantError(t testing.TB, status int, reason, message string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"reason": reason, "error_message": message})
	r.want(t, status, string(b))
}

// wantErrorContaining checks the status and reason, and that the message holds each of parts.
func (r mtResp) wantErrorContaining(t testing.TB, status int, reason string, parts ...string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	var e struct {
		Reason       string `json:"reason"`
		ErrorMessage string `json:"error_message"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	if e.Reason != reason {
		t.Errorf("reason = %q, want %q", e.Reason, reason)
	}
	for _, p := range parts {
		if !strings.Contains(e.ErrorMessage, p) {
			t.Errorf("error_message %q does not contain %q", e.ErrorMessage, p)
		}
	}
}

// mtField digs a value out of decoded JSON: mtField(v, "users", 0, "id").
func mtField(t testing.TB, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("not an object at %v", p)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("not an array with index %d", k)
			}
			v = a[k]
		}
	}
	return v
}
