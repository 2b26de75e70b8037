package managementtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// reasonNotRecorded is the reason of a Replayer's answer to a request its
// cassette does not hold.
const reasonNotRecorded = "MANAGEMENTTEST.NOT_RECORDED"

// A Replayer is an http.RoundTripper that answers requests from a
// Cassette, without a network: set it as the Transport of
// Config.HTTPClient, in a management.Config with any credentials.
//
// A request is answered by the first interaction of the cassette not yet
// replayed whose request has the same method, path, query (the same
// parameters and values, in any order) and body (the same JSON value, or
// the same text). The Authorization header is ignored. The credentials a
// request carries are replaced by placeholders as the Recorder replaced
// the ones it recorded: in the order met, the End User tokens of
// authenticate bodies, a client id and secret in a token request's body
// and any management token not from the cassette, so that a test may run
// with credentials of its own. The management tokens the cassette's token
// answers hold are placeholders, which the SDK then sends as they are.
//
// A request the cassette does not hold, or whose recorded answers were all
// replayed, is answered 501 (the SDK retries no 501) with the reason
// MANAGEMENTTEST.NOT_RECORDED and a message that names the request and
// the nearest one the cassette holds to the same endpoint; never by a
// silent 404. UseCassette fails the test for each.
//
// Finding a request's answer takes the same time however many
// interactions the cassette holds; naming the nearest one on a miss, time
// in proportion to the interactions of its endpoint.
//
// A Replayer is safe for concurrent use by multiple goroutines.
type Replayer struct {
	name     string // the cassette's file, for messages
	base     string // the cassette's base path
	recorded []Interaction
	keys     []requestKey
	// endpoints maps an endpoint (see requestKey.endpoint) to its
	// interactions, in order: where a miss looks for the nearest.
	endpoints map[string][]int

	mu sync.Mutex
	// waiting maps a request's match key to the interactions of that
	// request not yet replayed, in order.
	waiting map[string][]int
	used    []bool
	creds   credentials // the values met, as placeholders
	misses  []string
}

// requestKey is what a request is matched by.
type requestKey struct {
	method, path, rawQuery, body string
	match                        string // equal for requests that match
	endpoint                     string // the Route with its method, or the method and path of no endpoint
	described                    string
}

// newKey returns the key of a request to path, below the base path base.
func newKey(base, method, path, rawQuery, body string) requestKey {
	k := requestKey{method: method, path: path, rawQuery: rawQuery, body: body}
	k.match = matchKey(method, path, rawQuery, body)
	below, _ := belowBase(base, path)
	if route, _, _, ok := matchRoute(method, below); ok {
		k.endpoint = string(route)
	} else {
		k.endpoint = method + " " + path
	}
	k.described = k.describe()
	return k
}

// matchKey is the same text for two requests if and only if they have
// the same method and path, the same query parameters and values in any
// order (or, where a query does not parse, the same text), and the same
// JSON body (its members in any order, numbers as written) or the same
// text.
func matchKey(method, path, rawQuery, body string) string {
	query := "text " + rawQuery
	if q, err := url.ParseQuery(rawQuery); err == nil {
		query = "parsed " + q.Encode() // sorted by name, each name's values in order
	}
	b := "text " + body
	var v any
	if body != "" && json.Valid([]byte(body)) && decodeExact([]byte(body), &v) == nil {
		canonical, _ := json.Marshal(v) // members sorted, numbers as written (json.Number)
		b = "JSON " + string(canonical)
	}
	var key strings.Builder
	for _, part := range [...]string{method, path, query, b} {
		key.WriteString(strconv.Itoa(len(part)))
		key.WriteByte(':')
		key.WriteString(part)
	}
	return key.String()
}

// describe names a request in a message: method, path, query and the
// start of its body.
func (k requestKey) describe() string {
	s := k.method + " " + k.path
	if k.rawQuery != "" {
		s += "?" + k.rawQuery
	}
	if k.body != "" {
		b := k.body
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(b)) == nil {
			b = compact.String()
		}
		if len(b) > 200 {
			b = b[:200] + "..."
		}
		s += " " + b
	}
	return s
}

// NewReplayer returns a Replayer that answers from c. c must not be
// changed afterwards. A nil c is an empty cassette: every request is
// answered as not recorded.
func NewReplayer(c *Cassette) *Replayer {
	if c == nil {
		c = &Cassette{}
	}
	r := &Replayer{
		name: c.file, base: c.basePath(), recorded: c.Interactions, used: make([]bool, len(c.Interactions)),
		keys: make([]requestKey, len(c.Interactions)), endpoints: map[string][]int{}, waiting: map[string][]int{},
	}
	if r.name == "" {
		r.name = "cassette"
	}
	for i, in := range c.Interactions {
		q := in.Request
		k := newKey(r.base, q.Method, q.Path, q.Query, q.Body)
		r.keys[i] = k
		r.waiting[k.match] = append(r.waiting[k.match], i)
		r.endpoints[k.endpoint] = append(r.endpoints[k.endpoint], i)
	}
	return r
}

// RoundTrip answers req from the cassette (see Replayer). It sends nothing.
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := readRequestBody(req)
	if err != nil {
		return nil, fmt.Errorf("managementtest: Replayer: reading the request's body: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range headerValues(req.Header, "Authorization") {
		r.creds.learnAuthorization(v, false)
	}
	below, _ := belowBase(r.base, req.URL.EscapedPath())
	route, _, _, _ := matchRoute(req.Method, below)
	b := r.creds.replace(r.creds.learnRequestBody(string(body), route), false)
	key := newKey(r.base, req.Method, r.creds.replace(req.URL.EscapedPath(), false), r.creds.replace(req.URL.RawQuery, false), b)
	if waiting := r.waiting[key.match]; len(waiting) > 0 {
		i := waiting[0]
		r.waiting[key.match] = waiting[1:]
		r.used[i] = true
		return replayed(req, r.recorded[i].Response, r.name)
	}
	msg := r.miss(key)
	r.misses = append(r.misses, msg)
	return refusedAnswer(req, reasonNotRecorded, msg), nil
}

// miss says that the cassette has no answer left for key, and names the
// nearest request it holds to the same endpoint: the least edit distance
// between their descriptions, one not replayed yet where two are as near.
// r.mu must be held.
func (r *Replayer) miss(key requestKey) string {
	msg := "managementtest: " + r.name + " has no answer left for " + key.described
	if len(r.keys) == 0 {
		return msg + "; it holds no interaction"
	}
	candidates := r.endpoints[key.endpoint]
	if len(candidates) == 0 {
		return msg + "; it holds no request to " + key.endpoint
	}
	best, bestDist := -1, 0
	for _, i := range candidates {
		limit := bestDist
		if best < 0 {
			limit = maxDistance
		}
		if d := distance(key.described, r.keys[i].described, limit); best < 0 || d < bestDist || (d == bestDist && r.used[best] && !r.used[i]) {
			best, bestDist = i, d
		}
	}
	msg += "; the nearest it holds is #" + strconv.Itoa(best+1) + " " + r.keys[best].described
	if r.used[best] {
		msg += " (replayed already)"
	}
	return msg
}

// maxDistance is the most bytes of a description distance compares.
const maxDistance = 256

// distance is the edit distance of the first maxDistance bytes of a and
// b, or limit+1 when it is more than limit: it stops as soon as every
// alignment costs more, in time bounded by the product of their lengths.
func distance(a, b string, limit int) int {
	a, b = a[:min(len(a), maxDistance)], b[:min(len(b), maxDistance)]
	if len(a)-len(b) > limit || len(b)-len(a) > limit {
		return limit + 1
	}
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		least := i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			least = min(least, cur[j])
		}
		if least > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit+1)
}

// replayed is the answer of a recorded response to req, or the error of
// a recorded request that got none.
func replayed(req *http.Request, rec RecordedResponse, name string) (*http.Response, error) {
	if rec.Status == 0 {
		return nil, fmt.Errorf("managementtest: replayed from %s: %s", name, rec.Error)
	}
	h := rec.Header.Clone()
	if h == nil {
		h = make(http.Header)
	}
	var body io.Reader = strings.NewReader(rec.Body)
	length := int64(len(rec.Body))
	if rec.Cut {
		body = io.MultiReader(body, failingReader{io.ErrUnexpectedEOF})
		length = -1
	} else {
		h.Set("Content-Length", strconv.Itoa(len(rec.Body)))
	}
	return &http.Response{
		Status:        strconv.Itoa(rec.Status) + " " + http.StatusText(rec.Status),
		StatusCode:    rec.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(body),
		ContentLength: length,
		Request:       req,
	}, nil
}

// unanswered returns the messages of the requests answered 501 so far.
func (r *Replayer) unanswered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.misses...)
}

// unused returns how many interactions were not replayed.
func (r *Replayer) unused() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, u := range r.used {
		if !u {
			n++
		}
	}
	return n
}

// String describes r by its cassette; never the tokens its requests
// carried.
func (r *Replayer) String() string {
	return fmt.Sprintf("managementtest.Replayer{Cassette:%q, Interactions:%d}", r.name, len(r.recorded))
}

// GoString is String, so that %#v does not print the tokens met.
func (r *Replayer) GoString() string { return r.String() }

// Format writes String whatever the verb (quoted for %q).
func (r *Replayer) Format(f fmt.State, verb rune) { formatString(f, verb, r.String()) }
