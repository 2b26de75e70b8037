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

// Pages are followed through their links exactly as given, with nothing
// added or re-encoded, past an empty page in the middle.
func TestListFollowsPagesExactly(t *testing.T) {
	c, mt := setup(t)
	registerPages(t, mt, map[string]httpmock.Responder{
		usersPath + "?order_by=updatedAt&order_direction=desc": pageOfUsers(usersPath+"?page=p%2F2%3D%3D&x=a+b", "u-1", "u-2"),
		usersPath + "?page=p%2F2%3D%3D&x=a+b":                  pageOfUsers(usersPath+"/?page=3;odd=%7E", "u-3"),
		usersPath + "/?page=3;odd=%7E":                         pageOfUsers("/v2/api/management/service_connect/users%2Fmore?page=4"),
		usersPath + "%2Fmore?page=4":                           pageOfUsers("", "u-4", "u-5"),
	})
	opts := &ListOptions{OrderBy: OrderByUpdatedAt, Direction: Descending}
	ids, errs := collect(c.Users.List(t.Context(), opts), idOfUser)
	if errs != nil {
		t.Fatal(errs)
	}
	if diff := cmp.Diff([]string{"u-1", "u-2", "u-3", "u-4", "u-5"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	testCalls(t, mt, pageCalls(
		usersPath+"?order_by=updatedAt&order_direction=desc",
		usersPath+"?page=p%2F2%3D%3D&x=a+b",
		usersPath+"/?page=3;odd=%7E",
		usersPath+"%2Fmore?page=4",
	))
	if diff := cmp.Diff(&ListOptions{OrderBy: OrderByUpdatedAt, Direction: Descending}, opts); diff != "" {
		t.Errorf("opts modified (-want +got):\n%s", diff)
	}
}

// Things share the same iterator.
func TestThingsListFollowsPages(t *testing.T) {
	c, mt := setup(t)
	registerPages(t, mt, map[string]httpmock.Responder{
		thingsPath:             pageOfThings(thingsPath+"?page=2", "p-1"),
		thingsPath + "?page=2": pageOfThings("", "p-2", "p-3"),
	})
	ids, errs := collect(c.Things.List(t.Context(), nil), idOfThing)
	if errs != nil {
		t.Fatal(errs)
	}
	if diff := cmp.Diff([]string{"p-1", "p-2", "p-3"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	testCalls(t, mt, pageCalls(thingsPath, thingsPath+"?page=2"))
}

// The link is appended to a base URL that has a path.
func TestListUnderBasePath(t *testing.T) {
	const gwTokenURL = "https://api.example.test/gw" + defaultPathPrefix + "/auth/token"
	c, mt := setup(t, Config{BaseURL: "https://api.example.test/gw/"})
	registerPages(t, mt, map[string]httpmock.Responder{
		"/gw" + usersPath:             pageOfUsers(usersPath+"?page=2", "u-1"),
		"/gw" + usersPath + "?page=2": pageOfUsers("", "u-2"),
	})
	mt.RegisterResponder(http.MethodPost, gwTokenURL,
		jsonResponder(http.StatusOK, map[string]any{"access_token": mockToken, "token_type": "Bearer", "expires_in": 600}))
	ids, errs := collect(c.Users.List(t.Context(), nil), idOfUser)
	if errs != nil || !cmp.Equal([]string{"u-1", "u-2"}, ids) {
		t.Fatalf("ids %v, errors %v", ids, errs)
	}
	testCalls(t, mt, map[string]int{
		"POST " + gwTokenURL: 1, "GET " + mockBaseURL + "/gw" + usersPath: 1, "GET " + mockBaseURL + "/gw" + usersPath + "?page=2": 1,
	})
}

// Breaking out of the loop stops fetching.
func TestListBreakStopsFetching(t *testing.T) {
	c, mt := setup(t)
	registerPages(t, mt, map[string]httpmock.Responder{
		usersPath:             pageOfUsers(usersPath+"?page=2", "u-1", "u-2"),
		usersPath + "?page=2": pageOfUsers("", "u-3"),
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
	testCalls(t, mt, pageCalls(usersPath))
}

// An error on a middle page comes once, after the earlier items, and
// without the page token.
func TestListErrorOnMiddlePage(t *testing.T) {
	c, mt := setup(t)
	const token = "tok-secret-123"
	registerPages(t, mt, map[string]httpmock.Responder{
		usersPath:                    pageOfUsers(usersPath+"?page="+token, "u-1", "u-2"),
		usersPath + "?page=" + token: jsonResponder(http.StatusBadRequest, map[string]any{"reason": ReasonRequestValidation, "error_message": "page is not valid"}),
		usersPath + "?page=never":    pageOfUsers("", "u-9"),
	})
	ids, errs := collect(c.Users.List(t.Context(), nil), idOfUser)
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
	testCalls(t, mt, pageCalls(usersPath, usersPath+"?page="+token))
}

// Every range starts again from the first page (or the NextPage the
// options held when List was called).
func TestListRerangingRestarts(t *testing.T) {
	c, mt := setup(t)
	registerPages(t, mt, map[string]httpmock.Responder{
		usersPath + "?order_direction=asc": pageOfUsers(usersPath+"?page=2", "u-1"),
		usersPath + "?page=2":              pageOfUsers("", "u-2"),
	})
	opts := &ListOptions{Direction: Ascending}
	seq := c.Users.List(t.Context(), opts)
	opts.Direction = "sideways" // the iterator keeps its copy
	for range 2 {
		ids, errs := collect(seq, idOfUser)
		if errs != nil || !cmp.Equal([]string{"u-1", "u-2"}, ids) {
			t.Fatalf("ids %v, errors %v", ids, errs)
		}
	}
	first, second := usersPath+"?order_direction=asc", usersPath+"?page=2"
	testCalls(t, mt, pageCalls(first, second, first, second))
}

// NextPage resumes from a link, for List and ListPage.
func TestListResumeFromNextPage(t *testing.T) {
	const link = usersPath + "?page=abc%3D%3D"
	c, mt := setup(t)
	registerPages(t, mt, map[string]httpmock.Responder{
		link:                  pageOfUsers(usersPath+"?page=3", "u-5"),
		usersPath + "?page=3": pageOfUsers("", "u-6"),
	})
	ids, errs := collect(c.Users.List(t.Context(), &ListOptions{NextPage: link}), idOfUser)
	if errs != nil || !cmp.Equal([]string{"u-5", "u-6"}, ids) {
		t.Fatalf("ids %v, errors %v", ids, errs)
	}
	page, err := c.Users.ListPage(t.Context(), &ListOptions{NextPage: link})
	if err != nil {
		t.Fatal(err)
	}
	want := &Page[*User]{
		Items:    []*User{{ID: "u-5", CreatedAt: stamp(t, "2024-01-02T03:04:05.678Z"), UpdatedAt: stamp(t, "2024-01-02T03:04:05.678Z")}},
		NextPage: usersPath + "?page=3",
	}
	if diff := cmp.Diff(want, page); diff != "" {
		t.Errorf("page (-want +got):\n%s", diff)
	}
	testCalls(t, mt, pageCalls(link, usersPath+"?page=3", link))
}

// Options the service would refuse, or a link we will not follow, fail
// before any request.
func TestListRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts ListOptions
		link bool // the error also matches ErrInvalidPageLink
	}{
		{"next page with order", ListOptions{NextPage: usersPath + "?page=2", OrderBy: OrderByUpdatedAt}, false},
		{"next page with direction", ListOptions{NextPage: usersPath + "?page=2", Direction: Descending}, false},
		{"unknown order", ListOptions{OrderBy: "createdAt"}, false},
		{"unknown direction", ListOptions{Direction: "ASC"}, false},
		{"absolute link", ListOptions{NextPage: "https://evil.test" + usersPath + "?page=2"}, true},
		{"scheme-relative link", ListOptions{NextPage: "//evil.test" + usersPath}, true},
		{"backslash link", ListOptions{NextPage: `/\evil.test/users`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
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
			_, errs := collect(c.Users.List(t.Context(), &tt.opts), idOfUser)
			if len(errs) != 1 {
				t.Fatalf("List yielded %d errors, want 1", len(errs))
			}
			check("Users.List", errs[0])
			_, err = c.Things.ListPage(t.Context(), &tt.opts)
			check("Things.ListPage", err)
			testCalls(t, mt, nil)
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
			c, mt := setup(t, Config{BaseURL: "https://api.example.test"})
			registerPages(t, mt, map[string]httpmock.Responder{usersPath: pageOfUsers(link, "u-1")})
			ids, errs := collect(c.Users.List(t.Context(), nil), idOfUser)
			if !cmp.Equal([]string{"u-1"}, ids) || len(errs) != 1 || !errors.Is(errs[0], ErrInvalidPageLink) {
				t.Fatalf("ids %v, errors %v; want u-1 then one ErrInvalidPageLink", ids, errs)
			}
			if msg := errs[0].Error(); strings.Contains(msg, "tok-secret") {
				t.Errorf("error %q holds the page token", msg)
			}
			testCalls(t, mt, pageCalls(usersPath))
			// ListPage returns the page's items, no link, and the refusal,
			// as List yields the items, then the error.
			page, err := c.Users.ListPage(t.Context(), nil)
			if !errors.Is(err, ErrInvalidPageLink) || page == nil || page.NextPage != "" || len(page.Items) != 1 || page.Items[0].ID != "u-1" {
				t.Fatalf("ListPage = %+v, %v; want u-1, no link and ErrInvalidPageLink", page, err)
			}
			if strings.Contains(err.Error(), "tok-secret") {
				t.Errorf("error %q holds the page token", err)
			}
			if _, err := c.Users.ListPage(t.Context(), &ListOptions{NextPage: link}); !errors.Is(err, ErrInvalidPageLink) {
				t.Errorf("resuming from it: error %v, want ErrInvalidPageLink", err)
			}
			testCalls(t, mt, pageCalls(usersPath, usersPath)) // both to the first page
		})
	}
}

// A link out of the base URL's path is refused.
func TestListRefusesLinkOutOfBasePath(t *testing.T) {
	const gwTokenURL = "https://api.example.test/gw" + defaultPathPrefix + "/auth/token"
	c, mt := setup(t, Config{BaseURL: "https://api.example.test/gw"})
	mt.RegisterResponder(http.MethodPost, gwTokenURL,
		jsonResponder(http.StatusOK, map[string]any{"access_token": mockToken, "token_type": "Bearer", "expires_in": 600}))
	registerPages(t, mt, map[string]httpmock.Responder{"/gw" + usersPath: pageOfUsers("/../admin/users?page=2", "u-1")})
	ids, errs := collect(c.Users.List(t.Context(), nil), idOfUser)
	if !cmp.Equal([]string{"u-1"}, ids) || len(errs) != 1 || !errors.Is(errs[0], ErrInvalidPageLink) {
		t.Fatalf("ids %v, errors %v; want u-1 then one ErrInvalidPageLink", ids, errs)
	}
	testCalls(t, mt, map[string]int{"POST " + gwTokenURL: 1, "GET " + mockBaseURL + "/gw" + usersPath: 1})
}

// A link already followed stops the listing with an error instead of a loop.
func TestListRepeatedLinkStops(t *testing.T) {
	t.Run("cycle", func(t *testing.T) {
		c, mt := setup(t)
		registerPages(t, mt, map[string]httpmock.Responder{
			usersPath:             pageOfUsers(usersPath+"?page=a", "u-1"),
			usersPath + "?page=a": pageOfUsers(usersPath+"?page=b", "u-2"),
			usersPath + "?page=b": pageOfUsers(usersPath+"?page=a", "u-3"),
		})
		ids, errs := collect(c.Users.List(t.Context(), nil), idOfUser)
		if !cmp.Equal([]string{"u-1", "u-2", "u-3"}, ids) || len(errs) != 1 || !errors.Is(errs[0], ErrInvalidPageLink) {
			t.Fatalf("ids %v, errors %v; want three users then one ErrInvalidPageLink", ids, errs)
		}
		testCalls(t, mt, pageCalls(usersPath, usersPath+"?page=a", usersPath+"?page=b"))
	})
	t.Run("back to the first page", func(t *testing.T) {
		c, mt := setup(t)
		registerPages(t, mt, map[string]httpmock.Responder{thingsPath: pageOfThings(thingsPath, "p-1")})
		ids, errs := collect(c.Things.List(t.Context(), nil), idOfThing)
		if !cmp.Equal([]string{"p-1"}, ids) || len(errs) != 1 || !errors.Is(errs[0], ErrInvalidPageLink) {
			t.Fatalf("ids %v, errors %v; want p-1 then one ErrInvalidPageLink", ids, errs)
		}
		testCalls(t, mt, pageCalls(thingsPath))
	})
	t.Run("ListPage linking to itself", func(t *testing.T) {
		c, mt := setup(t)
		registerPages(t, mt, map[string]httpmock.Responder{usersPath + "?page=a": pageOfUsers(usersPath+"?page=a", "u-1")})
		page, err := c.Users.ListPage(t.Context(), &ListOptions{NextPage: usersPath + "?page=a"})
		if !errors.Is(err, ErrInvalidPageLink) || page == nil || page.NextPage != "" || len(page.Items) != 1 {
			t.Errorf("ListPage = %+v, %v; want u-1, no link and ErrInvalidPageLink", page, err)
		}
	})
}

// The first page's error is yielded once, as it is.
func TestListFirstPageError(t *testing.T) {
	c, mt := setup(t)
	registerPages(t, mt, map[string]httpmock.Responder{usersPath: rawResponder(http.StatusUnauthorized, "application/json", `{"reason":"AUTH.UNAUTHORIZED","error_message":""}`)})
	ids, errs := collect(c.Users.List(t.Context(), nil), idOfUser)
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
	c, mt := setup(t)
	registerPages(t, mt, map[string]httpmock.Responder{
		usersPath: pageOfUsers(usersPath+"?page=2", "u-1"),
		// Asked for with the cancelled context: httpmock answers with the
		// context's error, whatever its handler does.
		usersPath + "?page=2": pageOfUsers("", "u-2"),
	})
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
	c, mt := setup(t)
	registerPages(t, mt, map[string]httpmock.Responder{usersPath: pageOfUsers("", "u-1", "u-2", "u-3")})
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
		{"https://api.example.test", usersPath + "?page=eyJ9%3D&order=x", true},
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
		c, _ := setup(t, Config{BaseURL: tt.base})
		err := c.checkPageLink(tt.link, newRedactor())
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
		"/", usersPath + "?page=abc", "//evil.test/x", `/\evil.test`, "/../x", "/%2e%2e/x",
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
		c, _ := setup(f, Config{BaseURL: raw})
		u, err := url.Parse(c.baseURL)
		if err != nil {
			f.Fatal(err)
		}
		bases = append(bases, fuzzBase{c, u})
	}
	f.Fuzz(func(t *testing.T, link string) {
		for _, b := range bases {
			if b.c.checkPageLink(link, newRedactor()) != nil {
				continue
			}
			if seg, form, found := oracleDotSegment(link); found {
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
	registerPages(t, mt, map[string]httpmock.Responder{
		usersPath:             pageOfUsers(usersPath+"?page=2", "u-1"),
		usersPath + "?page=2": jsonResponder(http.StatusBadRequest, map[string]any{"reason": ReasonRequestValidation, "error_message": "page is not valid"}),
	})
	_, errs := collect(c.Users.List(t.Context(), nil), idOfUser)
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

// oracleEscape is one valid percent-escape.
var oracleEscape = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)

// oracleDotSegment is FuzzPageLink's oracle, written apart from the code it
// checks: it looks for a segment that is "." or ".." once its ";" path
// parameter is dropped, in the link's path as given and percent-decoded
// again and again (valid escapes only) until nothing changes. Segments end
// at "/" and at a backslash. It returns the segment and the form it was in.
func oracleDotSegment(link string) (seg, form string, found bool) {
	form, _, _ = strings.Cut(link, "?")
	for {
		for _, s := range strings.FieldsFunc(form, func(r rune) bool { return r == '/' || r == '\\' }) {
			if s, _, _ := strings.Cut(s, ";"); s == "." || s == ".." {
				return s, form, true
			}
		}
		next := oracleEscape.ReplaceAllStringFunc(form, func(esc string) string {
			b, _ := hex.DecodeString(esc[1:])
			return string(b)
		})
		if next == form {
			return "", "", false
		}
		form = next
	}
}

// TestListReservesThePreviousPageSize: a page after the first is decoded
// into a slice with room for as many items as the page before held, so
// the decoder fills it without growing it (json's growth would leave
// room for 4 or more of 3).
func TestListReservesThePreviousPageSize(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users",
		jsonResponder(http.StatusOK, map[string]any{"users": []map[string]any{{"id": "u-1"}, {"id": "u-2"}, {"id": "u-3"}}}))
	l := c.Users.list()
	op, err := l.firstOperation(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ hint, wantCap int }{{3, 3}, {5, 5}} {
		items, _, err := l.fetch(context.Background(), op, tc.hint)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 3 || cap(items) != tc.wantCap {
			t.Errorf("hint %d: %d items in a slice of capacity %d; want 3 in %d", tc.hint, len(items), cap(items), tc.wantCap)
		}
	}
}

// A link or an id whose percent-escapes are nested deeper than any chain
// of servers decodes is refused, after maxDecodings rounds: checking it as
// often as it decodes took time quadratic in its length (a megabyte of
// "%2525...": a service's link or an id an End User chose).
func TestDeeplyNestedEscapesAreRefused(t *testing.T) {
	c, _ := setup(t)
	nested := func(levels int) string { return "%" + strings.Repeat("25", levels-1) + "2e" }
	for _, levels := range []int{maxDecodings + 1, 20_000} {
		err := c.checkPageLink(usersPath+"/"+nested(levels)+"x?page=2", newRedactor())
		if !errors.Is(err, ErrInvalidPageLink) || !strings.Contains(err.Error(), "nested more than") {
			t.Errorf("a link nested %d deep: %v; want it refused as nested too deep", levels, err)
		}
		if _, err := c.Things.Get(t.Context(), nested(levels)+"x"); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("an id nested %d deep: %v; want ErrInvalidArgument", levels, err)
		}
	}
	// Up to maxDecodings, each decoding is checked, and a harmless id goes through.
	if err := c.checkPageLink(usersPath+"/"+nested(maxDecodings)+"x?page=2", newRedactor()); err != nil {
		t.Errorf("a link nested %d deep: %v", maxDecodings, err)
	}
	if err := c.checkPageLink(usersPath+"/"+nested(maxDecodings)+"?page=2", newRedactor()); !errors.Is(err, ErrInvalidPageLink) {
		t.Errorf("a dot segment nested %d deep: %v; want it refused", maxDecodings, err)
	}
}
