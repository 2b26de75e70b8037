package managementtest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The fidelity check: how far the fake answers as the service did. It
// seeds a fake from what a cassette's answers show, sends the cassette's
// requests to it in order (following the fake's own next_page links), and
// compares the answers, page by page. Values are not compared (the fake
// has its own clock, tokens and page links); what an answer is made of is:
// its status, its error shape and reason, the fields it has, whether a
// page links to a next one, whether a Retry-After came.

// VerifyFidelity runs CheckFidelity on the cassette at path and fails t
// with the report's table if the fake answered any request otherwise than
// the service did; otherwise it logs the report. opts configure the fake
// as for NewServer. A missing cassette fails t with how to record one, as
// UseCassette does.
func VerifyFidelity(t testing.TB, path string, opts ...Option) {
	t.Helper()
	c, err := loadForTest(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := CheckFidelity(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Differences) > 0 {
		t.Errorf("the fake answers otherwise than the service did:\n%s", r)
		return
	}
	t.Log(strings.TrimSpace(r.String()))
}

// CheckFidelity compares the fake with the service a cassette recorded. It
// makes an in-memory fake (NewInMemoryServer with opts, after the path
// prefix the cassette's requests used and the page size its pages show)
// and seeds it with what the answers show: every User and Thing, with
// their associations, as first shown (those a recorded associate created
// are left for it to create, and those first answered 404 are left out),
// and an End User token for each one whose recorded verdict was valid.
//
// The fake's lists are then in the service's order, ties included: the
// fake orders Users and Things created (or, by order_by=updatedAt,
// updated) in the same millisecond by their creation, and the seeding
// creates them in the order the recorded pages show. Two tied items
// listed one after the other (on a page, or across a next_page link the
// cassette followed) were created the later first in a descending list,
// the earlier first in an ascending one; items no page orders are created
// in the order first shown. So each page of the fake holds the service's
// items, and a difference is reported for every page where it occurs.
// Items of the service's page that the fake's lacks are listed as not
// compared.
//
// Then it sends the cassette's requests to the fake in order, with the
// fake's credentials and tokens in place of the placeholders, and follows
// the fake's own next_page links where the service's were followed; a
// 401 the service gave for an expired token is met by expiring the
// fake's; a 429 or 5xx the service gave (a moment's answer, which a fake
// gives only when told) is staged on the fake as it would give it (a 429
// as WithRateLimit answers, a 5xx as FailNext), so that its shape is
// compared. It compares each answer with the recorded one and reports each
// difference once, with every interaction where it occurs. It sends
// nothing over a network.
func CheckFidelity(c *Cassette, opts ...Option) (*FidelityReport, error) {
	if c == nil {
		return nil, errors.New("managementtest: CheckFidelity: no cassette")
	}
	ck := newCheck(c, opts)
	ck.seed()
	ck.run()
	return ck.report, nil
}

// check is one run of CheckFidelity.
type check struct {
	c      *Cassette
	srv    *Server
	hc     *http.Client
	base   string // the cassette's base path, before every recorded path
	report *FidelityReport

	// The fake's tokens for the cassette's placeholders, and the live
	// management token the requests carry.
	tokens  map[string]string
	mgmt    string
	expired bool // mgmt was expired for the request under way
	// links maps each next_page link the service gave to the fake's link
	// at the same place ("" where the fake's list had ended).
	links map[string]string
	// followed are the recorded requests of further pages, by their link.
	followed map[string]bool
	seen     map[string]int // a difference's key -> its index in the report
}

func newCheck(c *Cassette, opts []Option) *check {
	name := c.file
	if name == "" {
		name = "cassette"
	}
	ck := &check{
		c: c, base: c.basePath(), report: &FidelityReport{Cassette: name},
		tokens: map[string]string{}, links: map[string]string{}, followed: map[string]bool{}, seen: map[string]int{},
	}
	ck.srv = NewInMemoryServer(append([]Option{WithPathPrefix(c.pathPrefix()), WithPageSize(c.pageSize())}, opts...)...)
	ck.hc = &http.Client{Transport: ck.srv.Transport(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, in := range c.Interactions {
		if in.Request.Query != "" {
			ck.followed[ck.below(in.Request.Path)+"?"+in.Request.Query] = true
		}
	}
	return ck
}

// below is a recorded path without the cassette's base path.
func (ck *check) below(path string) string {
	if p, ok := belowBase(ck.base, path); ok {
		return p
	}
	return path
}

// routeOf returns the endpoint a recorded request reaches on the fake,
// with its path values: "" when it reaches none (no route, or another
// path prefix than the fake's).
func (ck *check) routeOf(in Interaction) (Route, map[string]string) {
	below, ok := belowBase(ck.base, in.Request.Path)
	if !ok {
		return "", nil
	}
	route, prefix, values, ok := matchRoute(in.Request.Method, below)
	if !ok || prefix != ck.srv.escapedPrefix {
		return "", nil
	}
	return route, values
}

// pageSize is the service's page size as the cassette shows it: the
// length of its longest page that links to a next one; else, every list
// having fit in one page, DefaultPageSize or the longest page.
func (c *Cassette) pageSize() int {
	full, longest := 0, 0
	for _, in := range c.Interactions {
		var page struct {
			Users    []json.RawMessage `json:"users"`
			Things   []json.RawMessage `json:"things"`
			NextPage *string           `json:"next_page"`
		}
		if in.Response.Status/100 != 2 || json.Unmarshal([]byte(in.Response.Body), &page) != nil {
			continue
		}
		n := max(len(page.Users), len(page.Things))
		longest = max(longest, n)
		if page.NextPage != nil && *page.NextPage != "" {
			full = max(full, n)
		}
	}
	if full > 0 {
		return full
	}
	return max(DefaultPageSize, longest)
}

// run sends each recorded request to the fake and compares the answers.
func (ck *check) run() {
	for i, in := range ck.c.Interactions {
		n := i + 1
		below := ck.below(in.Request.Path)
		route, _ := ck.routeOf(in)
		name := string(route)
		if route == "" {
			name = in.Request.Method + " (no endpoint)"
		}
		rec := in.Response
		switch {
		case rec.Status == 0:
			ck.notCompared(fmt.Sprintf("#%d %s: the service gave no answer", n, name))
			continue
		case rec.Cut:
			ck.notCompared(fmt.Sprintf("#%d %s: the service's answer was cut off", n, name))
			continue
		}
		target := below
		if in.Request.Query != "" {
			target += "?" + in.Request.Query
		}
		if route.is(listEndpoint) && pageQuery(in.Request.Query) {
			link, ok := ck.links[target]
			switch {
			case !ok:
				ck.notCompared(fmt.Sprintf("#%d %s: a further page whose link no recorded answer gave", n, name))
				continue
			case link == "":
				ck.notCompared(fmt.Sprintf("#%d %s: a further page the fake's listing does not have (see next_page above)", n, name))
				continue
			}
			target = link
		}
		staged := ck.stage(route, rec)
		resp, body, err := ck.send(in, route, target)
		if ck.expired {
			ck.mgmt, ck.expired = "", false
		}
		if err != nil {
			ck.notCompared(fmt.Sprintf("#%d %s: the fake gave no answer: %v", n, name, err))
			continue
		}
		ck.report.Compared++
		ck.compare(n, name, route, rec, resp, body, staged)
	}
}

// pageQuery reports whether a list's query names a page: a further page.
func pageQuery(rawQuery string) bool {
	q, err := url.ParseQuery(rawQuery)
	return err != nil || q.Has("page")
}

// stage makes the fake give the next request of route the 429 or 5xx
// the service gave: a 429 as WithRateLimit answers, a 5xx as FailNext. It
// returns what gives the fake's answer, "" for none staged.
func (ck *check) stage(route Route, rec RecordedResponse) string {
	if route == "" {
		return ""
	}
	switch rec.Status {
	case http.StatusTooManyRequests:
		ck.srv.FailNextWith(route, 1, limitedResponse(1))
		return "rate limit"
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		ck.srv.FailNext(route, 1, rec.Status, 0)
		return "FailNext"
	case http.StatusUnauthorized:
		if !route.is(tokenEndpoint) {
			// The service refused the token the request carried: the
			// fake's expires, and the request carries it; the next one
			// carries a new token.
			_, _ = ck.managementToken()
			ck.srv.ExpireTokens()
			ck.expired = true
		}
	}
	return ""
}

// send sends the request of in to the fake at target (path and query
// below the base), with the fake's credentials and tokens.
func (ck *check) send(in Interaction, route Route, target string) (*http.Response, []byte, error) {
	body := ck.fill(in.Request.Body)
	req, err := http.NewRequest(in.Request.Method, ck.srv.URL+target, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if body == "" {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", "application/json")
	if ct := in.Request.Header.Get("Content-Type"); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if route.is(tokenEndpoint) {
		secret := ck.srv.ClientSecret
		if in.Response.Status == http.StatusUnauthorized {
			secret = "not-" + secret // the service refused the credentials
		}
		req.SetBasicAuth(ck.srv.ClientID, secret)
	} else if tok, err := ck.managementToken(); err == nil {
		req.Header.Set("Authorization", "Bearer "+tok)
	} else {
		return nil, nil, err
	}
	resp, data, err := ck.do(req)
	if err == nil && route.is(tokenEndpoint) && resp.StatusCode == http.StatusOK {
		var fake, recorded tokenResponse
		if json.Unmarshal(data, &fake) == nil && json.Unmarshal([]byte(in.Response.Body), &recorded) == nil {
			ck.mgmt = fake.AccessToken
			if isPlaceholder(recorded.AccessToken) {
				ck.tokens[recorded.AccessToken] = fake.AccessToken
			}
		}
	}
	return resp, data, err
}

func (ck *check) do(req *http.Request) (*http.Response, []byte, error) {
	resp, err := ck.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

// managementToken is the fake's live management token, got from it when
// there is none (a cassette recorded with a TokenSource has no token
// request, and the fake's tokens expire where the service's did).
func (ck *check) managementToken() (string, error) {
	if ck.mgmt != "" {
		return ck.mgmt, nil
	}
	req, _ := http.NewRequest(http.MethodPost, ck.srv.URL+ck.srv.escapedPrefix+RouteToken.template(), strings.NewReader(`{"grant_type":"client_credentials"}`))
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(ck.srv.ClientID+":"+ck.srv.ClientSecret)))
	resp, data, err := ck.do(req)
	if err != nil {
		return "", err
	}
	var tr tokenResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &tr) != nil {
		return "", fmt.Errorf("the fake issued no management token (%s)", resp.Status)
	}
	ck.mgmt = tr.AccessToken
	return ck.mgmt, nil
}

// fill replaces the placeholders of a recorded body by the fake's tokens:
// an End User token it issued, a management token. A placeholder it has
// no token for stays: the fake finds it invalid, as the service did.
func (ck *check) fill(body string) string {
	return replacePlaceholders(body, func(p string) (string, bool) {
		if tok, ok := ck.tokens[p]; ok {
			return tok, true
		}
		if strings.HasPrefix(p, "{{"+kindManagementToken+"_") {
			tok, err := ck.managementToken()
			return tok, err == nil
		}
		return "", false
	})
}
