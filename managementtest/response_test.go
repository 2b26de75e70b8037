package managementtest_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// mtBoth runs f against a fake on loopback and one in memory.
func mtBoth(t *testing.T, f func(t *testing.T, c *mtConn)) {
	t.Run("network", func(t *testing.T) { f(t, mtStart(t)) })
	t.Run("in memory", func(t *testing.T) { f(t, mtMemory(t)) })
}

// mtRaw is an answer read as far as it goes.
type mtRaw struct {
	resp    *http.Response
	body    []byte
	readErr error
}

// raw sends an authorised GET on a connection of its own (no reuse, so
// that net/http does not replay a request whose connection was closed)
// and reads the body as far as it goes. It returns the request's error.
func (c *mtConn) raw(t *testing.T, path string) (mtRaw, error) {
	t.Helper()
	if c.token == "" {
		c.token = c.newToken()
	}
	hc := &http.Client{Transport: c.hc.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if tr, ok := hc.Transport.(*http.Transport); ok || hc.Transport == nil {
		if tr == nil {
			tr = http.DefaultTransport.(*http.Transport)
		}
		tr = tr.Clone()
		tr.DisableKeepAlives = true
		hc.Transport = tr
		defer tr.CloseIdleConnections()
	}
	req, err := http.NewRequest("GET", c.srv.URL+mtPrefix+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range c.apiHeader() {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return mtRaw{}, err
	}
	defer resp.Body.Close()
	body, readErr := io.ReadAll(resp.Body)
	return mtRaw{resp: resp, body: body, readErr: readErr}, nil
}

// FailNextWith answers exactly the Response: status, headers and raw body,
// with no Content-Type added, then the route serves again.
func TestFailNextWith(t *testing.T) {
	mtBoth(t, func(t *testing.T, c *mtConn) {
		c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
		html := "<html><body>Bad gateway</body></html>" // 37 bytes
		c.srv.FailNextWith(managementtest.RouteGetUser, 2, managementtest.Response{
			Status: 502, Header: http.Header{"Content-Type": {"text/html"}, "X-Proxy": {"a", "b"}}, Body: html,
		})
		c.srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Status: 200, Body: `{"id":"u-1",`})
		c.srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{
			Status: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: `{"reason":"COMMON.ENTITY_NOT_FOUND","error_message":"on a 200"}`, // 63 bytes
		})
		c.srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Status: 204})

		type answer struct {
			Status                     int
			ContentType, Length, Proxy []string
			Body                       string
		}
		shape := `{"reason":"COMMON.ENTITY_NOT_FOUND","error_message":"on a 200"}`
		want := []answer{
			{502, []string{"text/html"}, []string{"37"}, []string{"a", "b"}, html},
			{502, []string{"text/html"}, []string{"37"}, []string{"a", "b"}, html},
			{200, nil, []string{"12"}, nil, `{"id":"u-1",`},
			{200, []string{"application/json"}, []string{"63"}, nil, shape},
			{204, nil, nil, nil, ""},
		}
		for i, w := range want {
			r, err := c.raw(t, "/users/u-1")
			if err != nil || r.readErr != nil {
				t.Fatalf("request %d: %v, %v", i, err, r.readErr)
			}
			got := answer{r.resp.StatusCode, r.resp.Header["Content-Type"], r.resp.Header["Content-Length"], r.resp.Header["X-Proxy"], string(r.body)}
			if _, present := r.resp.Header["Content-Type"]; present != (w.ContentType != nil) {
				t.Errorf("request %d: Content-Type present = %t", i, present)
			}
			if w.Status == 204 {
				got.Length = nil // net/http drops it for 204 over the network
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("request %d (-want +got):\n%s", i, diff)
			}
		}
		if r, err := c.raw(t, "/users/u-1"); err != nil || r.resp.StatusCode != 200 || !strings.Contains(string(r.body), `"id":"u-1"`) {
			t.Errorf("after the faults: %v %v", r.resp, err)
		}
		if got := c.srv.Requests(managementtest.RouteGetUser); got != 6 {
			t.Errorf("Requests = %d, want 6", got)
		}
	})
}

// A redirect is a 3xx with a Location; the fake sends it as it is.
func TestFailNextWithRedirect(t *testing.T) {
	mtBoth(t, func(t *testing.T, c *mtConn) {
		loc := c.srv.URL + mtPrefix + "/users/u-2"
		c.srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Status: 307, Header: http.Header{"Location": {loc}}})
		r, err := c.raw(t, "/users/u-1")
		if err != nil || r.resp.StatusCode != 307 || r.resp.Header.Get("Location") != loc || len(r.body) != 0 {
			t.Fatalf("redirect: %v %v", r.resp, err)
		}
	})
}

// A Cut with no Status closes the connection before any answer; with a
// Status, after the headers and CutAfter bytes of the body.
func TestFailNextWithCut(t *testing.T) {
	mtBoth(t, func(t *testing.T, c *mtConn) {
		c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
		c.srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Cut: true})
		if r, err := c.raw(t, "/users/u-1"); err == nil || !errors.Is(err, io.EOF) {
			t.Errorf("cut before the answer: got %v, %v; want an error wrapping io.EOF", r.resp, err)
		}

		body := `{"id":"u-1","email":null}`
		c.srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{
			Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: body, Cut: true, CutAfter: 10,
		})
		r, err := c.raw(t, "/users/u-1")
		if err != nil {
			t.Fatalf("cut mid-body: %v", err)
		}
		if r.resp.StatusCode != 200 || r.resp.ContentLength != int64(len(body)) || r.resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("cut mid-body: status %d, length %d, header %v", r.resp.StatusCode, r.resp.ContentLength, r.resp.Header)
		}
		if string(r.body) != body[:10] || !errors.Is(r.readErr, io.ErrUnexpectedEOF) {
			t.Errorf("cut mid-body: read %q, %v; want %q, io.ErrUnexpectedEOF", r.body, r.readErr, body[:10])
		}

		// The server goes on serving.
		if r, err := c.raw(t, "/users/u-1"); err != nil || r.resp.StatusCode != 200 || r.readErr != nil {
			t.Errorf("after the cuts: %v %v", r.resp, err)
		}
		if got := c.srv.Requests(managementtest.RouteGetUser); got != 3 {
			t.Errorf("Requests = %d, want 3", got)
		}
	})
}

// The SDK retries a request whose connection was cut, and reports a body
// cut midway as a decoding failure.
func TestCutClientSees(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	ctx := t.Context()
	srv.FailNextWith(managementtest.RouteGetUser, 2, managementtest.Response{Cut: true})
	if u, err := srv.Client().Users.Get(ctx, "u-1"); err != nil || u.ID != "u-1" {
		t.Fatalf("after two cuts: %v, %v", u, err)
	}
	if got := srv.Requests(managementtest.RouteGetUser); got != 3 {
		t.Errorf("Requests = %d, want 3", got)
	}
	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Status: 200, Body: `{"id":"u-1"}`, Cut: true, CutAfter: 5})
	_, err := srv.Client().Users.Get(ctx, "u-1")
	var de *management.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut mid-body: %v; want a *DecodeError wrapping io.ErrUnexpectedEOF", err)
	}
}

// FailNextFor fails the requests of one id only, and leaves the queue of
// the route's other faults in order.
func TestFailNextFor(t *testing.T) {
	c := mtMemory(t)
	for _, id := range []string{"th-1", "th-2"} {
		c.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: id}})
	}
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	teapot := managementtest.Response{Status: 418, Body: "teapot"}
	c.srv.FailNextFor(managementtest.RouteGetThing, "th-1", 2, teapot)
	c.srv.FailNextWith(managementtest.RouteGetThing, 1, managementtest.Response{Status: 503, Body: "any"})
	for i, want := range []struct {
		id     string
		status int
	}{{"th-2", 503}, {"th-2", 200}, {"th-1", 418}, {"th-2", 200}, {"th-1", 418}, {"th-1", 200}} {
		if r := c.api("GET", "/things/"+want.id, ""); r.status != want.status {
			t.Errorf("request %d for %s: %d, want %d", i, want.id, r.status, want.status)
		}
	}
	// Either id of a disassociation, and ids are compared unescaped.
	c.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "a/b"}})
	c.srv.FailNextFor(managementtest.RouteDisassociate, "u-1", 1, teapot)
	c.srv.FailNextFor(managementtest.RouteDisassociate, "a/b", 1, teapot)
	for i, path := range []string{"/users/u-1/associated_things/th-1", "/users/u-2/associated_things/a%2Fb", "/users/u-2/associated_things/a%2Fb"} {
		want := map[bool]int{true: 418, false: 404}[i < 2]
		if r := c.api("DELETE", path, ""); r.status != want {
			t.Errorf("DELETE %s: %d, want %d", path, r.status, want)
		}
	}
}

func TestFailNextWithMisusePanics(t *testing.T) {
	type R = managementtest.Response
	srv := managementtest.NewInMemoryServer()
	get, ok := managementtest.RouteGetUser, R{Status: 500}
	calls := map[string]func(){
		"unknown route":           func() { srv.FailNextWith("GET /nope", 1, ok) },
		"n < 1":                   func() { srv.FailNextWith(get, 0, ok) },
		"FailNextFor without ids": func() { srv.FailNextFor(managementtest.RouteListUsers, "u-1", 1, ok) },
		"FailNextFor empty id":    func() { srv.FailNextFor(get, "", 1, ok) },
		"FailNextFor n < 1":       func() { srv.FailNextFor(get, "u-1", 0, ok) },
		"FailNextFor bad answer":  func() { srv.FailNextFor(get, "u-1", 1, R{}) },
	}
	for name, r := range map[string]R{
		"no status":             {},
		"1xx":                   {Status: 100},
		"600":                   {Status: 600},
		"body on 204":           {Status: 204, Body: "x"},
		"body on 304":           {Status: 304, Body: "x"},
		"Content-Length":        {Status: 200, Header: http.Header{"content-length": {"1"}}},
		"CutAfter without Cut":  {Status: 200, Body: "ab", CutAfter: 1},
		"cut of the whole body": {Status: 200, Body: "ab", Cut: true, CutAfter: 2},
		"cut of no body":        {Status: 200, Cut: true},
		"negative CutAfter":     {Status: 200, Body: "ab", Cut: true, CutAfter: -1},
		"body with no answer":   {Cut: true, Body: "x"},
		"header with no answer": {Cut: true, Header: http.Header{}},
	} {
		calls[name] = func() { srv.FailNextWith(get, 1, r) }
	}
	for name, f := range calls {
		if msg := mtPanics(f); !strings.HasPrefix(msg, "managementtest: ") {
			t.Errorf("%s: panic %q, want one starting with managementtest: ", name, msg)
		}
	}
	// Nothing was queued by the refused calls.
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	if _, err := srv.Client().Users.Get(t.Context(), "u-1"); err != nil {
		t.Errorf("after refused calls: %v", err)
	}
}

// The server keeps its own copy of a Response: changing the caller's
// Header afterwards changes nothing.
func TestFailNextWithCopiesResponse(t *testing.T) {
	c := mtMemory(t)
	h := http.Header{"X-A": {"1"}}
	c.srv.FailNextWith(managementtest.RouteListUsers, 1, managementtest.Response{Status: 500, Header: h})
	h.Set("X-A", "2")
	h["X-A"][0] = "3"
	if r := c.api("GET", "/users", ""); r.status != 500 || r.header.Get("X-A") != "1" {
		t.Errorf("got %d with X-A %q, want 500 with 1", r.status, r.header.Get("X-A"))
	}
}
