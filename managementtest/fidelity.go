package managementtest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/serviceconnect/management"
)

// The fidelity check: how far the fake answers as the service did. It
// seeds a fake from what a cassette's answers show, sends the cassette's
// requests to it in order (following the fake's own next_page links), and
// compares the answers, page by page. Values are not compared (the fake
// has its own clock, tokens and page links); what an answer is made of is:
// its status, its error shape and reason, the fields it has, whether a
// page links to a next one, whether a Retry-After came.

// A Difference is one way the fake answered otherwise than the service,
// for requests of one endpoint.
type Difference struct {
	// Interactions are the numbers, from 1, of the cassette's interactions
	// where the fake answered so.
	Interactions []int
	// Request is the endpoint: a Route ("GET /users/{user_id}"), so that
	// no id shows.
	Request string
	// Aspect is what differs: "status", "error shape", "reason", "verdict"
	// (is_token_valid), "field <path>" ("field users[].email"), "next_page"
	// or "Retry-After".
	Aspect string
	// Service and Fake say what each answered: a status, a shape, a
	// reason, "present" or "absent", "a link" or "null".
	Service, Fake string
}

// A FidelityReport is what CheckFidelity found.
type FidelityReport struct {
	// Cassette names the cassette's file ("cassette" when it was not read
	// from one).
	Cassette string
	// Compared is the number of answers compared.
	Compared int
	// Differences are where the fake answered otherwise, in the order of
	// the interactions where each was first seen.
	Differences []Difference
	// NotCompared says which interactions could not be compared, and why.
	NotCompared []string
}

// String is the report as a short Markdown table, to paste into an issue:
// it shows statuses, shapes, reasons and field names, never a value.
func (r *FidelityReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "managementtest fidelity (management-go %s): %d answers of %s compared, %d differences.\n",
		management.Version, r.Compared, r.Cassette, len(r.Differences))
	if len(r.Differences) > 0 {
		b.WriteString("\n| # | request | what | service | fake |\n|---|---|---|---|---|\n")
		for _, d := range r.Differences {
			nums := make([]string, len(d.Interactions))
			for i, n := range d.Interactions {
				nums[i] = strconv.Itoa(n)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", strings.Join(nums, ", "), cell(d.Request), cell(d.Aspect), cell(d.Service), cell(d.Fake))
		}
	}
	if len(r.NotCompared) > 0 {
		b.WriteString("\nNot compared:\n")
		for _, n := range r.NotCompared {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}

// cell is s as a table cell: no bar, no line break, at most 80 bytes.
func cell(s string) string {
	s = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// VerifyFidelity runs CheckFidelity on the cassette at path and fails t
// with the report's table if the fake answered any request otherwise than
// the service did; otherwise it logs the report. opts configure the fake
// as for NewServer.
func VerifyFidelity(t testing.TB, path string, opts ...Option) {
	t.Helper()
	c, err := LoadCassette(path)
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
// Then it sends the cassette's requests to the fake in order, with the
// fake's credentials and tokens in place of the placeholders, and follows
// the fake's own next_page links where the service's were followed; a
// 401 the service gave for an expired token is met by expiring the
// fake's; a 429 or 5xx the service gave (a moment's answer, which a fake
// gives only when told) is staged on the fake as it would give it (a 429
// as WithRateLimit answers, a 5xx as FailNext), so that its shape is
// compared. It compares each answer with the recorded one and reports each
// difference once. It sends nothing over a network.
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
	if p, ok := strings.CutPrefix(path, ck.base); ok {
		return p
	}
	return path
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

// routeOf returns the endpoint of a request below the base path, with its
// path values; "" when it reaches none.
func (s *service) routeOf(method, escapedPath string) (Route, map[string]string) {
	p, err := url.PathUnescape(escapedPath)
	if err != nil {
		return "", nil
	}
	in, ok := s.below(&http.Request{Method: method, URL: &url.URL{Path: p, RawPath: escapedPath}})
	if !ok {
		return "", nil
	}
	_, pattern := s.mux.Handler(in)
	route := Route(pattern)
	if !slices.Contains(s.routes, route) || route.method() != method {
		return "", nil
	}
	values := map[string]string{}
	_, tmpl, _ := strings.Cut(string(route), " ")
	segs, got := strings.Split(tmpl, "/"), strings.Split(in.URL.EscapedPath(), "/")
	for i, seg := range segs {
		if name, ok := strings.CutPrefix(seg, "{"); ok && i < len(got) {
			values[strings.TrimSuffix(name, "}")], _ = url.PathUnescape(got[i])
		}
	}
	return route, values
}

// run sends each recorded request to the fake and compares the answers.
func (ck *check) run() {
	for i, in := range ck.c.Interactions {
		n := i + 1
		below := ck.below(in.Request.Path)
		route, _ := ck.srv.routeOf(in.Request.Method, below)
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
		if (route == RouteListUsers || route == RouteListThings) && pageQuery(in.Request.Query) {
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
		if route != RouteToken {
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
	if route == RouteToken {
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
	if err == nil && route == RouteToken && resp.StatusCode == http.StatusOK {
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
	req, _ := http.NewRequest(http.MethodPost, ck.srv.URL+ck.srv.opts.pathPrefix+"/auth/token", strings.NewReader(`{"grant_type":"client_credentials"}`))
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
	if !strings.Contains(body, "{{") {
		return body
	}
	for p, tok := range ck.tokens {
		body = strings.ReplaceAll(body, p, tok)
	}
	if strings.Contains(body, "{{"+kindManagementToken+"_") {
		if tok, err := ck.managementToken(); err == nil {
			for i := strings.Index(body, "{{"+kindManagementToken+"_"); i >= 0; i = strings.Index(body, "{{"+kindManagementToken+"_") {
				end := strings.Index(body[i:], "}}")
				if end < 0 {
					break
				}
				body = body[:i] + tok + body[i+end+2:]
			}
		}
	}
	return body
}

// compare reports how the fake's answer differs from the service's.
func (ck *check) compare(n int, name string, route Route, rec RecordedResponse, resp *http.Response, body []byte, staged string) {
	fake := func(s string) string {
		if staged != "" {
			return s + " (" + staged + ")"
		}
		return s
	}
	if rec.Status != resp.StatusCode {
		ck.differ(n, name, "status", strconv.Itoa(rec.Status), fake(strconv.Itoa(resp.StatusCode)))
		if route == RouteListUsers || route == RouteListThings {
			ck.listEnded(rec)
		}
		return
	}
	var sv, fv any
	sJSON := decodeExact([]byte(rec.Body), &sv) == nil
	fJSON := decodeExact(body, &fv) == nil
	if rec.Status/100 != 2 {
		sShape, sReason := errorShape(rec.Body, sv, sJSON)
		fShape, fReason := errorShape(string(body), fv, fJSON)
		switch {
		case sShape != fShape:
			ck.differ(n, name, "error shape", sShape, fake(fShape))
			ck.retryAfter(n, name, rec.Header, resp.Header, fake)
			return
		case sReason != fReason:
			ck.differ(n, name, "reason", sReason, fake(fReason))
		}
	}
	if route == RouteAuthenticate && rec.Status/100 == 2 {
		sValid, fValid := member(sv, "is_token_valid"), member(fv, "is_token_valid")
		if fmt.Sprint(sValid) != fmt.Sprint(fValid) {
			ck.differ(n, name, "verdict", "is_token_valid "+fmt.Sprint(sValid), fake("is_token_valid "+fmt.Sprint(fValid)))
			ck.retryAfter(n, name, rec.Header, resp.Header, fake)
			return
		}
	}
	if sJSON && fJSON {
		ck.fields(n, name, sv, fv, fake)
	}
	if (route == RouteListUsers || route == RouteListThings) && rec.Status/100 == 2 {
		ck.nextPage(n, name, sv, fv, fake)
	}
	ck.retryAfter(n, name, rec.Header, resp.Header, fake)
}

// errorShape names the shape of an error body, and its reason (or error).
func errorShape(raw string, v any, isJSON bool) (shape, reason string) {
	switch {
	case strings.TrimSpace(raw) == "":
		return "empty", ""
	case !isJSON:
		return "not JSON", ""
	}
	obj, _ := v.(map[string]any)
	switch {
	case obj == nil:
		return "JSON, not an object", ""
	case obj["reason"] != nil:
		return "{reason, error_message}", fmt.Sprint(obj["reason"])
	case obj["error"] != nil:
		return "{error, error_description}", fmt.Sprint(obj["error"])
	}
	return "another JSON object", ""
}

// member is the member key of a JSON object v, nil when there is none.
func member(v any, key string) any {
	obj, _ := v.(map[string]any)
	return obj[key]
}

// fields reports the fields one answer has and the other has not, member
// by member: the items of two lists are paired by their id (id,
// physical_id, key or name), or by their place when they have none, and
// an item the other list lacks is not compared; custom_settings are data,
// not fields, and are not looked into.
func (ck *check) fields(n int, name string, sv, fv any, fake func(string) string) {
	var walk func(s, f any, path string)
	walk = func(s, f any, path string) {
		switch sx := s.(type) {
		case map[string]any:
			fx, ok := f.(map[string]any)
			if !ok {
				return
			}
			for _, k := range slices.Sorted(maps.Keys(sx)) {
				p := join(path, k)
				if _, ok := fx[k]; !ok {
					ck.differ(n, name, "field "+p, "present", fake("absent"))
				} else if k != "custom_settings" {
					walk(sx[k], fx[k], p)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(fx)) {
				if _, ok := sx[k]; !ok {
					ck.differ(n, name, "field "+join(path, k), "absent", fake("present"))
				}
			}
		case []any:
			fx, ok := f.([]any)
			if !ok {
				return
			}
			for i, item := range sx {
				if other, ok := pair(item, i, fx); ok {
					walk(item, other, path+"[]")
				}
			}
		}
	}
	walk(sv, fv, "")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// pair returns the item of list that stands for item, the i-th of its
// own list: the one with the same id, or the i-th when items have none.
func pair(item any, i int, list []any) (any, bool) {
	if id, key := identity(item); key != "" {
		for _, other := range list {
			if oid, okey := identity(other); okey == key && oid == id {
				return other, true
			}
		}
		return nil, false
	}
	if i < len(list) {
		return list[i], true
	}
	return nil, false
}

// identity returns the id of a list's item, and the member that holds it.
func identity(item any) (id, key string) {
	obj, _ := item.(map[string]any)
	for _, k := range []string{"id", "physical_id", "key", "name"} {
		if v, ok := obj[k].(string); ok {
			return v, k
		}
	}
	return "", ""
}

// nextPage compares whether each page links to a next one, and notes the
// fake's link for the request that follows the service's.
func (ck *check) nextPage(n int, name string, sv, fv any, fake func(string) string) {
	sLink, _ := member(sv, "next_page").(string)
	fLink, _ := member(fv, "next_page").(string)
	if sLink != "" {
		ck.links[sLink] = fLink
	}
	switch {
	case sLink != "" && fLink == "" && !ck.followed[sLink]:
		ck.notCompared(fmt.Sprintf("#%d %s: next_page, as the cassette did not follow the service's link (the fake holds only the items the cassette shows)", n, name))
	case (sLink == "") != (fLink == ""):
		ck.differ(n, name, "next_page", linkOrNull(sLink), fake(linkOrNull(fLink)))
	}
}

// listEnded notes that the fake has no page where the service's answer
// linked to one.
func (ck *check) listEnded(rec RecordedResponse) {
	var sv any
	if decodeExact([]byte(rec.Body), &sv) == nil {
		if l, _ := member(sv, "next_page").(string); l != "" {
			ck.links[l] = ""
		}
	}
}

func linkOrNull(link string) string {
	if link == "" {
		return "null"
	}
	return "a link"
}

// retryAfter compares whether a Retry-After came.
func (ck *check) retryAfter(n int, name string, s, f http.Header, fake func(string) string) {
	has := func(h http.Header) string {
		if h.Get("Retry-After") != "" {
			return "present"
		}
		return "absent"
	}
	if has(s) != has(f) {
		ck.differ(n, name, "Retry-After", has(s), fake(has(f)))
	}
}

// differ reports a difference, or adds n to the same one reported before.
func (ck *check) differ(n int, request, aspect, service, fake string) {
	key := request + "\x00" + aspect + "\x00" + service + "\x00" + fake
	if i, ok := ck.seen[key]; ok {
		d := &ck.report.Differences[i]
		if d.Interactions[len(d.Interactions)-1] != n { // once per interaction, however many items
			d.Interactions = append(d.Interactions, n)
		}
		return
	}
	ck.seen[key] = len(ck.report.Differences)
	ck.report.Differences = append(ck.report.Differences, Difference{Interactions: []int{n}, Request: request, Aspect: aspect, Service: service, Fake: fake})
}

func (ck *check) notCompared(why string) {
	ck.report.NotCompared = append(ck.report.NotCompared, why)
}
