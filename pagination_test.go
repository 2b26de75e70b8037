package management

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

const (
	resUsersPath  = "/v2/api/management/service_connect/users"
	resThingsPath = "/v2/api/management/service_connect/things"
)

// resPages serves list pages by escaped path and raw query, as a server
// that hands out next_page links would, and records every request. A
// request for anything else gets a 418, so that a test sees it.
func resPages(mt *httpmock.MockTransport, pages map[string]httpmock.Responder) *recorder {
	return resServe(mt, func(req *http.Request) (*http.Response, error) {
		key := req.URL.EscapedPath()
		if req.URL.RawQuery != "" {
			key += "?" + req.URL.RawQuery
		}
		if r, ok := pages[key]; ok {
			return r(req)
		}
		return httpmock.NewStringResponse(http.StatusTeapot, "unexpected request "+key), nil
	})
}

// resUsers is a users page of the given ids, with next as next_page ("" for null).
func resUsers(next string, ids ...string) httpmock.Responder {
	users := make([]map[string]any, len(ids))
	for i, id := range ids {
		users[i] = map[string]any{"id": id, "created_at": "2024-01-02T03:04:05.678Z", "updated_at": "2024-01-02T03:04:05.678Z"}
	}
	body := map[string]any{"users": users, "next_page": nil}
	if next != "" {
		body["next_page"] = next
	}
	return jsonResponder(http.StatusOK, body)
}

// resThings is a things page of the given physical ids.
func resThings(next string, ids ...string) httpmock.Responder {
	things := make([]map[string]any, len(ids))
	for i, id := range ids {
		things[i] = map[string]any{"physical_id": id, "created_at": "2024-01-02T03:04:05.678Z", "updated_at": "2024-01-02T03:04:05.678Z"}
	}
	body := map[string]any{"things": things, "next_page": nil}
	if next != "" {
		body["next_page"] = next
	}
	return jsonResponder(http.StatusOK, body)
}

// resCollect ranges over seq and returns the ids and errors it yielded.
// It gives up after 100 yields, so that a listing that loops fails the test.
func resCollect[T any](seq func(func(*T, error) bool), id func(*T) string) (ids []string, errs []error) {
	n := 0
	for item, err := range seq {
		if n++; n > 100 {
			errs = append(errs, errors.New("more than 100 yields: the listing loops"))
			break
		}
		if err != nil {
			if item != nil {
				ids = append(ids, "non-nil item with error")
			}
			errs = append(errs, err)
			continue
		}
		ids = append(ids, id(item))
	}
	return ids, errs
}

func resUserID(u *User) string          { return u.ID }
func resThingID(t *Thing) string        { return t.PhysicalID }
func resGet(path, query string) resWant { return resWant{Method: "GET", Path: path, Query: query} }

// Pages are followed through their links exactly as given, with nothing
// added or re-encoded, past an empty page in the middle.
func TestListFollowsPagesExactly(t *testing.T) {
	c, mt := newMockClient(t, Config{})
	rec := resPages(mt, map[string]httpmock.Responder{
		resUsersPath + "?order_by=updatedAt&order_direction=desc": resUsers(resUsersPath+"?page=p%2F2%3D%3D&x=a+b", "u-1", "u-2"),
		resUsersPath + "?page=p%2F2%3D%3D&x=a+b":                  resUsers(resUsersPath+"/?page=3;odd=%7E", "u-3"),
		resUsersPath + "/?page=3;odd=%7E":                         resUsers("/v2/api/management/service_connect/users%2Fmore?page=4"),
		resUsersPath + "%2Fmore?page=4":                           resUsers("", "u-4", "u-5"),
	})
	opts := &ListOptions{OrderBy: OrderByUpdatedAt, Direction: Descending}
	ids, errs := resCollect(c.Users.List(t.Context(), opts), resUserID)
	if errs != nil {
		t.Fatal(errs)
	}
	if diff := cmp.Diff([]string{"u-1", "u-2", "u-3", "u-4", "u-5"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	resCheckRequests(t, rec.all(), []resWant{
		resGet(resUsersPath, "order_by=updatedAt&order_direction=desc"),
		resGet(resUsersPath, "page=p%2F2%3D%3D&x=a+b"),
		resGet(resUsersPath+"/", "page=3;odd=%7E"),
		resGet(resUsersPath+"%2Fmore", "page=4"),
	})
	if diff := cmp.Diff(&ListOptions{OrderBy: OrderByUpdatedAt, Direction: Descending}, opts); diff != "" {
		t.Errorf("opts modified (-want +got):\n%s", diff)
	}
}

// Things share the same iterator.
func TestThingsListFollowsPages(t *testing.T) {
	c, mt := newMockClient(t, Config{})
	rec := resPages(mt, map[string]httpmock.Responder{
		resThingsPath:             resThings(resThingsPath+"?page=2", "p-1"),
		resThingsPath + "?page=2": resThings("", "p-2", "p-3"),
	})
	ids, errs := resCollect(c.Things.List(t.Context(), nil), resThingID)
	if errs != nil {
		t.Fatal(errs)
	}
	if diff := cmp.Diff([]string{"p-1", "p-2", "p-3"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	resCheckRequests(t, rec.all(), []resWant{resGet(resThingsPath, ""), resGet(resThingsPath, "page=2")})
}

// The link is appended to a base URL that has a path.
func TestListUnderBasePath(t *testing.T) {
	c, mt := newMockClient(t, Config{BaseURL: "https://api.example.test/gw/"})
	rec := resPages(mt, map[string]httpmock.Responder{
		"/gw" + resUsersPath:             resUsers(resUsersPath+"?page=2", "u-1"),
		"/gw" + resUsersPath + "?page=2": resUsers("", "u-2"),
	})
	mt.RegisterResponder(http.MethodPost, "https://api.example.test/gw"+defaultPathPrefix+"/auth/token",
		jsonResponder(http.StatusOK, map[string]any{"access_token": mockToken, "token_type": "Bearer", "expires_in": 600}))
	ids, errs := resCollect(c.Users.List(t.Context(), nil), resUserID)
	if errs != nil || !cmp.Equal([]string{"u-1", "u-2"}, ids) {
		t.Fatalf("ids %v, errors %v", ids, errs)
	}
	resCheckRequests(t, rec.all(), []resWant{resGet("/gw"+resUsersPath, ""), resGet("/gw"+resUsersPath, "page=2")})
}

// Breaking out of the loop stops fetching.
func TestListBreakStopsFetching(t *testing.T) {
	c, mt := newMockClient(t, Config{})
	rec := resPages(mt, map[string]httpmock.Responder{
		resUsersPath:             resUsers(resUsersPath+"?page=2", "u-1", "u-2"),
		resUsersPath + "?page=2": resUsers("", "u-3"),
	})
	var got []string
	for u, err := range c.Users.List(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, u.ID)
		if u.ID == "u-2" {
			break
		}
	}
	if !cmp.Equal([]string{"u-1", "u-2"}, got) {
		t.Errorf("got %v", got)
	}
	resCheckRequests(t, rec.all(), []resWant{resGet(resUsersPath, "")})
}

// An error on a middle page comes once, after the earlier items, and
// without the page token.
func TestListErrorOnMiddlePage(t *testing.T) {
	c, mt := newMockClient(t, Config{})
	const token = "tok-secret-123"
	rec := resPages(mt, map[string]httpmock.Responder{
		resUsersPath:                    resUsers(resUsersPath+"?page="+token, "u-1", "u-2"),
		resUsersPath + "?page=" + token: jsonResponder(http.StatusBadRequest, map[string]any{"reason": ReasonRequestValidation, "error_message": "page is not valid"}),
		resUsersPath + "?page=never":    resUsers("", "u-9"),
	})
	ids, errs := resCollect(c.Users.List(t.Context(), nil), resUserID)
	if !cmp.Equal([]string{"u-1", "u-2"}, ids) || len(errs) != 1 {
		t.Fatalf("ids %v, errors %v; want u-1, u-2 and one error", ids, errs)
	}
	err := errs[0]
	var ae *APIError
	if !errors.As(err, &ae) || !errors.Is(err, ErrValidation) || ae.Path != "/users" {
		t.Errorf("error %v: want an *APIError for /users matching ErrValidation", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "page 2") || strings.Contains(msg, token) {
		t.Errorf("error %q: want it to name page 2 and not the page token", msg)
	}
	if n := len(rec.all()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// Every range starts again from the first page (or the NextPage the
// options held when List was called).
func TestListRerangingRestarts(t *testing.T) {
	c, mt := newMockClient(t, Config{})
	rec := resPages(mt, map[string]httpmock.Responder{
		resUsersPath + "?order_direction=asc": resUsers(resUsersPath+"?page=2", "u-1"),
		resUsersPath + "?page=2":              resUsers("", "u-2"),
	})
	opts := &ListOptions{Direction: Ascending}
	seq := c.Users.List(t.Context(), opts)
	opts.Direction = "sideways" // the iterator keeps its copy
	for range 2 {
		ids, errs := resCollect(seq, resUserID)
		if errs != nil || !cmp.Equal([]string{"u-1", "u-2"}, ids) {
			t.Fatalf("ids %v, errors %v", ids, errs)
		}
	}
	first, second := resGet(resUsersPath, "order_direction=asc"), resGet(resUsersPath, "page=2")
	resCheckRequests(t, rec.all(), []resWant{first, second, first, second})
}

// NextPage resumes from a link, for List and ListPage.
func TestListResumeFromNextPage(t *testing.T) {
	const link = resUsersPath + "?page=abc%3D%3D"
	c, mt := newMockClient(t, Config{})
	rec := resPages(mt, map[string]httpmock.Responder{
		link:                     resUsers(resUsersPath+"?page=3", "u-5"),
		resUsersPath + "?page=3": resUsers("", "u-6"),
	})
	ids, errs := resCollect(c.Users.List(t.Context(), &ListOptions{NextPage: link}), resUserID)
	if errs != nil || !cmp.Equal([]string{"u-5", "u-6"}, ids) {
		t.Fatalf("ids %v, errors %v", ids, errs)
	}
	page, err := c.Users.ListPage(t.Context(), &ListOptions{NextPage: link})
	if err != nil {
		t.Fatal(err)
	}
	want := &Page[*User]{
		Items:    []*User{{ID: "u-5", CreatedAt: resTS(t, "2024-01-02T03:04:05.678Z"), UpdatedAt: resTS(t, "2024-01-02T03:04:05.678Z")}},
		NextPage: resUsersPath + "?page=3",
	}
	if diff := cmp.Diff(want, page); diff != "" {
		t.Errorf("page (-want +got):\n%s", diff)
	}
	resCheckRequests(t, rec.all(), []resWant{
		resGet(resUsersPath, "page=abc%3D%3D"), resGet(resUsersPath, "page=3"), resGet(resUsersPath, "page=abc%3D%3D"),
	})
}

// Options the service would refuse, or a link we will not follow, fail
// before any request.
func TestListRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts ListOptions
		link bool // the error also matches ErrInvalidPageLink
	}{
		{"next page with order", ListOptions{NextPage: resUsersPath + "?page=2", OrderBy: OrderByUpdatedAt}, false},
		{"next page with direction", ListOptions{NextPage: resUsersPath + "?page=2", Direction: Descending}, false},
		{"unknown order", ListOptions{OrderBy: "createdAt"}, false},
		{"unknown direction", ListOptions{Direction: "ASC"}, false},
		{"absolute link", ListOptions{NextPage: "https://evil.test" + resUsersPath + "?page=2"}, true},
		{"scheme-relative link", ListOptions{NextPage: "//evil.test" + resUsersPath}, true},
		{"backslash link", ListOptions{NextPage: `/\evil.test/users`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := newMockClient(t, Config{})
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrInvalidPageLink) != tt.link {
					t.Errorf("%s: error %v; want ErrInvalidArgument (and ErrInvalidPageLink: %t)", what, err, tt.link)
				}
			}
			page, err := c.Users.ListPage(t.Context(), &tt.opts)
			check("Users.ListPage", err)
			if page != nil {
				t.Errorf("page %v with an error", page)
			}
			_, errs := resCollect(c.Users.List(t.Context(), &tt.opts), resUserID)
			if len(errs) != 1 {
				t.Fatalf("List yielded %d errors, want 1", len(errs))
			}
			check("Users.List", errs[0])
			_, err = c.Things.ListPage(t.Context(), &tt.opts)
			check("Things.ListPage", err)
			resNoRequest(t, mt)
		})
	}
}

// A next_page that is not a path under the base URL is refused after the
// items of its page, and never requested, wherever it points.
func TestListRefusesForeignLinks(t *testing.T) {
	links := []string{
		"https://evil.test/v2/api/management/service_connect/users?page=tok-secret",
		"http://api.example.test/v2/api/management/service_connect/users?page=tok-secret",
		"//evil.test/v2/api/management/service_connect/users?page=tok-secret",
		`/\evil.test/users?page=tok-secret`,
		`\\evil.test/users?page=tok-secret`,
		`/v2\users?page=tok-secret`,
		"evil.test/users?page=tok-secret",
		"users?page=tok-secret",
		"javascript:alert(1)",
		"/v2/../../users?page=tok-secret",
		"/v2/%2e%2e/users?page=tok-secret",
		"/v2/..%2f..%2fusers?page=tok-secret",
		"/v2/%5c%5cevil.test?page=tok-secret",
		"/v2/..;x/../users?page=tok-secret",
		"/v2/%2e%2e;/users?page=tok-secret",
		"/v2/..%3B/users?page=tok-secret",
		"/v2/%252e%252e/users?page=tok-secret",
		"/users page?page=tok-secret",
		"/users\n?page=tok-secret",
		"/users\x00?page=tok-secret",
		"/users\x7f?page=tok-secret",
		"/usérs?page=tok-secret",
		"/users#frag?page=tok-secret",
		" /users?page=tok-secret",
		"/users%zz?page=tok-secret",
		"/users?page=tok-secret\r\nHost: evil.test",
	}
	for _, link := range links {
		t.Run(fmt.Sprintf("%q", link), func(t *testing.T) {
			c, mt := newMockClient(t, Config{BaseURL: "https://api.example.test"})
			rec := resPages(mt, map[string]httpmock.Responder{resUsersPath: resUsers(link, "u-1")})
			ids, errs := resCollect(c.Users.List(t.Context(), nil), resUserID)
			if !cmp.Equal([]string{"u-1"}, ids) || len(errs) != 1 || !errors.Is(errs[0], ErrInvalidPageLink) {
				t.Fatalf("ids %v, errors %v; want u-1 then one ErrInvalidPageLink", ids, errs)
			}
			if msg := errs[0].Error(); strings.Contains(msg, "tok-secret") {
				t.Errorf("error %q holds the page token", msg)
			}
			resCheckRequests(t, rec.all(), []resWant{resGet(resUsersPath, "")})
			// ListPage hands the link back; it is refused when used.
			page, err := c.Users.ListPage(t.Context(), nil)
			if err != nil || page.NextPage != link {
				t.Fatalf("ListPage = %v, %v", page, err)
			}
			if _, err := c.Users.ListPage(t.Context(), &ListOptions{NextPage: page.NextPage}); !errors.Is(err, ErrInvalidPageLink) {
				t.Errorf("resuming from it: error %v, want ErrInvalidPageLink", err)
			}
			if n := len(rec.all()); n != 2 {
				t.Errorf("%d requests, want 2 (both to the first page)", n)
			}
		})
	}
}

// A link out of the base URL's path is refused.
func TestListRefusesLinkOutOfBasePath(t *testing.T) {
	c, mt := newMockClient(t, Config{BaseURL: "https://api.example.test/gw"})
	mt.RegisterResponder(http.MethodPost, "https://api.example.test/gw"+defaultPathPrefix+"/auth/token",
		jsonResponder(http.StatusOK, map[string]any{"access_token": mockToken, "token_type": "Bearer", "expires_in": 600}))
	rec := resPages(mt, map[string]httpmock.Responder{"/gw" + resUsersPath: resUsers("/../admin/users?page=2", "u-1")})
	ids, errs := resCollect(c.Users.List(t.Context(), nil), resUserID)
	if !cmp.Equal([]string{"u-1"}, ids) || len(errs) != 1 || !errors.Is(errs[0], ErrInvalidPageLink) {
		t.Fatalf("ids %v, errors %v; want u-1 then one ErrInvalidPageLink", ids, errs)
	}
	if n := len(rec.all()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// A link already followed stops the listing with an error instead of a loop.
func TestListRepeatedLinkStops(t *testing.T) {
	t.Run("cycle", func(t *testing.T) {
		c, mt := newMockClient(t, Config{})
		rec := resPages(mt, map[string]httpmock.Responder{
			resUsersPath:             resUsers(resUsersPath+"?page=a", "u-1"),
			resUsersPath + "?page=a": resUsers(resUsersPath+"?page=b", "u-2"),
			resUsersPath + "?page=b": resUsers(resUsersPath+"?page=a", "u-3"),
		})
		ids, errs := resCollect(c.Users.List(t.Context(), nil), resUserID)
		if !cmp.Equal([]string{"u-1", "u-2", "u-3"}, ids) || len(errs) != 1 || !errors.Is(errs[0], ErrInvalidPageLink) {
			t.Fatalf("ids %v, errors %v; want three users then one ErrInvalidPageLink", ids, errs)
		}
		if n := len(rec.all()); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
	})
	t.Run("back to the first page", func(t *testing.T) {
		c, mt := newMockClient(t, Config{})
		rec := resPages(mt, map[string]httpmock.Responder{resThingsPath: resThings(resThingsPath, "p-1")})
		ids, errs := resCollect(c.Things.List(t.Context(), nil), resThingID)
		if !cmp.Equal([]string{"p-1"}, ids) || len(errs) != 1 || !errors.Is(errs[0], ErrInvalidPageLink) {
			t.Fatalf("ids %v, errors %v; want p-1 then one ErrInvalidPageLink", ids, errs)
		}
		if n := len(rec.all()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("ListPage linking to itself", func(t *testing.T) {
		c, mt := newMockClient(t, Config{})
		resPages(mt, map[string]httpmock.Responder{resUsersPath + "?page=a": resUsers(resUsersPath+"?page=a", "u-1")})
		if _, err := c.Users.ListPage(t.Context(), &ListOptions{NextPage: resUsersPath + "?page=a"}); !errors.Is(err, ErrInvalidPageLink) {
			t.Errorf("error %v, want ErrInvalidPageLink", err)
		}
	})
}

// The first page's error is yielded once, as it is.
func TestListFirstPageError(t *testing.T) {
	c, mt := newMockClient(t, Config{})
	resPages(mt, map[string]httpmock.Responder{resUsersPath: resRaw(http.StatusUnauthorized, []byte(`{"reason":"AUTH.UNAUTHORIZED","error_message":""}`))})
	ids, errs := resCollect(c.Users.List(t.Context(), nil), resUserID)
	if ids != nil || len(errs) != 1 || !errors.Is(errs[0], ErrUnauthorized) {
		t.Fatalf("ids %v, errors %v; want one ErrUnauthorized", ids, errs)
	}
	var ae *APIError
	if !errors.As(errs[0], &ae) || errs[0] != error(ae) {
		t.Errorf("error %v: want the *APIError itself", errs[0])
	}
}

// A cancelled context ends the listing with its error.
func TestListContextCancelled(t *testing.T) {
	c, mt := newMockClient(t, Config{})
	resPages(mt, map[string]httpmock.Responder{resUsersPath: resUsers(resUsersPath+"?page=2", "u-1")})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var errs []error
	for u, err := range c.Users.List(ctx, nil) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if u.ID == "u-1" {
			cancel()
		}
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Errorf("errors %v, want one context.Canceled", errs)
	}
}

// Items are pointers into the decoded page, not copies made one by one.
func TestListYieldsPointersIntoPage(t *testing.T) {
	c, mt := newMockClient(t, Config{})
	resPages(mt, map[string]httpmock.Responder{resUsersPath: resUsers("", "u-1", "u-2", "u-3")})
	var ptrs []*User
	for u, err := range c.Users.List(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		ptrs = append(ptrs, u)
	}
	page, err := c.Users.ListPage(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, ps := range map[string][]*User{"List": ptrs, "ListPage": page.Items} {
		if len(ps) != 3 {
			t.Fatalf("%s: %d items", name, len(ps))
		}
		for i := range ps {
			if unsafe.Pointer(ps[i]) != unsafe.Add(unsafe.Pointer(ps[0]), uintptr(i)*unsafe.Sizeof(User{})) {
				t.Errorf("%s: item %d is not element %d of the page's slice", name, i, i)
			}
		}
	}
}

func TestCheckPageLink(t *testing.T) {
	tests := []struct {
		base, link string
		ok         bool
	}{
		{"https://api.example.test", "/", true},
		{"https://api.example.test", resUsersPath + "?page=eyJ9%3D&order=x", true},
		{"https://api.example.test", "/a%20b/c;d=e/@x:y?q=%2F%3F", true},
		{"https://api.example.test", "/users?", true},
		{"https://api.example.test:8443/gw", "/v2/users?page=2", true},
		{"https://api.example.test/a%41", "/b?page=2", true},
		{"https://api.example.test", "", false},
		{"https://api.example.test", "users", false},
		{"https://api.example.test", "//evil.test/users", false},
		{"https://api.example.test", "///users", false},
		{"https://api.example.test", `/\evil`, false},
		{"https://api.example.test", "/users?page=a\\b", false},
		{"https://api.example.test", "/users?page=a b", false},
		{"https://api.example.test", "/users?page=\t", false},
		{"https://api.example.test", "/.", false},
		{"https://api.example.test/gw", "/..", false},
		{"https://api.example.test/gw", "/%2E%2e/x", false},
		{"https://api.example.test/gw", "/x/%2e", false},
		{"https://api.example.test/gw", "/x%2f..%2f..%2fy", false},
		{"https://api.example.test", "/users%", false},
		{"https://api.example.test", "/users\"quoted\"", false}, // would be re-encoded on the way
		{"https://api.example.test", "/users{x}", false},
		{"https://api.example.test", "/users#frag", false},
		// Path parameters: servlet containers drop ";..." before they
		// resolve dot segments, so these are ".." or "." to them.
		{"https://api.example.test/gw", "/..;x/admin", false},
		{"https://api.example.test/gw", "/v2/.;x/users", false},
		{"https://api.example.test/gw", "/..;", false},
		{"https://api.example.test/gw", "/.;", false},
		{"https://api.example.test/gw", "/x/..;jsessionid=1?page=2", false},
		// The same, escaped: decoded once, they are dot segments.
		{"https://api.example.test/gw", "/%2e%2e;x/admin", false},
		{"https://api.example.test/gw", "/%2E.;x", false},
		{"https://api.example.test/gw", "/..%3bx/admin", false},
		{"https://api.example.test/gw", "/.%3B", false},
		{"https://api.example.test/gw", "/x%2f..%3b%2fy", false},
		// Escaped twice or more: a proxy and a server may each decode once.
		{"https://api.example.test/gw", "/%252e%252e/admin", false},
		{"https://api.example.test/gw", "/%25252E%25252E/admin", false},
		{"https://api.example.test/gw", "/x%252f..%252fy", false},
		{"https://api.example.test/gw", "/%252e%252e%253bx/admin", false},
		{"https://api.example.test/gw", "/%255cevil.test", false},
		// Look-alikes that no server reads as a dot segment.
		{"https://api.example.test/gw", "/users;jsessionid=1?page=2", true},
		{"https://api.example.test/gw", "/...;x/y", true},
		{"https://api.example.test/gw", "/.a;b/..b", true},
		{"https://api.example.test/gw", "/a;../b", true},
		{"https://api.example.test/gw", "/%2e%2e%2e;x", true},
		{"https://api.example.test/gw", "/%252e%252ex", true},
		{"https://api.example.test/gw", "/a%25zz/b", true},
	}
	for _, tt := range tests {
		c, _ := newMockClient(t, Config{BaseURL: tt.base})
		err := c.checkPageLink(tt.link)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, ErrInvalidPageLink) {
			t.Errorf("checkPageLink(%q, %q) = %v, want ok %t", tt.base, tt.link, err, tt.ok)
		}
	}
}

// FuzzPageLink checks that no link is accepted that, appended to the base
// URL and resolved, leaves the base URL's scheme, host or path, that would
// not be sent exactly as given, or whose path has a segment a server could
// take for "." or "..": as given or percent-decoded (once or more), and
// with its ";" path parameter dropped.
func FuzzPageLink(f *testing.F) {
	for _, s := range []string{
		"/", resUsersPath + "?page=abc", "//evil.test/x", `/\evil.test`, "/../x", "/%2e%2e/x",
		"/a%2f..%2f..%2fb", "https://evil.test/", "/x?y=/../z", "/@evil.test", "/:80", "/x#y",
		"/..;x/y", "/%2e.;/y", "/..%3B/y", "/%252e%252e/y", "/a;b/c",
	} {
		f.Add(s)
	}
	type fuzzBase struct {
		c    *Client
		base *url.URL
	}
	var bases []fuzzBase
	for _, raw := range []string{"https://api.example.test", "https://api.example.test:8443/gw/v1", "http://127.0.0.1:8080/a%2Fb"} {
		c, _ := newMockClient(f, Config{BaseURL: raw})
		u, err := url.Parse(c.baseURL)
		if err != nil {
			f.Fatal(err)
		}
		bases = append(bases, fuzzBase{c, u})
	}
	f.Fuzz(func(t *testing.T, link string) {
		for _, b := range bases {
			if b.c.checkPageLink(link) != nil {
				continue
			}
			if seg, form, found := resDotSegment(link); found {
				t.Fatalf("accepted %q: its path, read as %q, has the dot segment %q", link, form, seg)
			}
			full := b.c.baseURL + link
			u, err := url.Parse(full)
			if err != nil {
				t.Fatalf("accepted %q: %q does not parse: %v", link, full, err)
			}
			r := b.base.ResolveReference(u)
			if r.Scheme != b.base.Scheme || r.Host != b.base.Host || r.User != nil {
				t.Fatalf("accepted %q: %q goes to %s://%s", link, full, r.Scheme, r.Host)
			}
			basePath := strings.TrimSuffix(b.base.Path, "/")
			if cleaned := path.Clean(r.Path); cleaned != basePath && !strings.HasPrefix(cleaned, basePath+"/") {
				t.Fatalf("accepted %q: %q resolves to path %q, outside %q", link, full, cleaned, basePath)
			}
			linkPath, linkQuery, _ := strings.Cut(link, "?")
			if u.RequestURI() != b.c.basePath+link && !(linkQuery == "" && u.RequestURI() == b.c.basePath+linkPath) {
				t.Fatalf("accepted %q: sent as %q", link, u.RequestURI())
			}
		}
	})
}

// Errors that wrap another error of the package say "management: " once:
// the page of a listing that failed, and a refused ListOptions.NextPage.
func TestListErrorsSayPrefixOnce(t *testing.T) {
	c, mt := setup(t)
	resPages(mt, map[string]httpmock.Responder{
		resUsersPath:             resUsers(resUsersPath+"?page=2", "u-1"),
		resUsersPath + "?page=2": jsonResponder(http.StatusBadRequest, map[string]any{"reason": ReasonRequestValidation, "error_message": "page is not valid"}),
	})
	_, errs := resCollect(c.Users.List(t.Context(), nil), resUserID)
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one", errs)
	}
	_, linkErr := c.Users.ListPage(t.Context(), &ListOptions{NextPage: "/../x?page=2"})
	tests := []struct {
		err  error
		want string
		is   []error
	}{
		{errs[0], "management: listing /users, page 2: GET /users: 400 COMMON.REQUEST_VALIDATION: page is not valid", []error{ErrValidation}},
		{linkErr, `management: invalid argument: ListOptions.NextPage: invalid next_page link "/../x": holds a dot segment`, []error{ErrInvalidArgument, ErrInvalidPageLink}},
	}
	for _, tt := range tests {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("error %v, want %s", tt.err, tt.want)
		}
		for _, target := range tt.is {
			if !errors.Is(tt.err, target) {
				t.Errorf("error %v does not match %v", tt.err, target)
			}
		}
	}
}

// resEscape is one valid percent-escape.
var resEscape = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)

// resDotSegment is FuzzPageLink's oracle, written apart from the code it
// checks: it looks for a segment that is "." or ".." once its ";" path
// parameter is dropped, in the link's path as given and percent-decoded
// again and again (valid escapes only) until nothing changes. Segments end
// at "/" and at a backslash. It returns the segment and the form it was in.
func resDotSegment(link string) (seg, form string, found bool) {
	form, _, _ = strings.Cut(link, "?")
	for {
		for _, s := range strings.FieldsFunc(form, func(r rune) bool { return r == '/' || r == '\\' }) {
			if s, _, _ := strings.Cut(s, ";"); s == "." || s == ".." {
				return s, form, true
			}
		}
		next := resEscape.ReplaceAllStringFunc(form, func(esc string) string {
			b, _ := hex.DecodeString(esc[1:])
			return string(b)
		})
		if next == form {
			return "", "", false
		}
		form = next
	}
}
