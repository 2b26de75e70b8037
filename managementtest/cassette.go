package managementtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// A Cassette is a recording of the requests a management.Client sent to a
// service and of the service's answers, as a Recorder writes it and a
// Replayer and CheckFidelity read it. It holds no credential: the
// Authorization values (under any spelling of the name and the scheme),
// the client secret (in Basic, a JSON body or a form body), the
// management, refresh and id tokens of a token answer and the End User
// tokens are replaced by placeholders that name them
// ("{{management_token_1}}"), by position and wherever an answer echoes
// them, in any encoding; a client id sent in a token request's body is
// replaced there ("{{client_id_1}}"), so that a replay with another one
// matches.
//
// The file is JSON, written to be reviewed in a pull request: one object
// per interaction, in the order the requests were sent, members in a fixed
// order, headers sorted by name, JSON bodies pretty-printed as they came
// (members in their order, numbers as written); a body that is not JSON
// is a string ("body_text").
type Cassette struct {
	// BaseURL is the base URL the requests were sent to.
	BaseURL string
	// Interactions are the requests and their answers, in the order the
	// requests were sent.
	Interactions []Interaction

	file string // where LoadCassette read it, for the replay's messages
}

// An Interaction is one request of a Cassette and what came back.
type Interaction struct {
	Request  RecordedRequest
	Response RecordedResponse
}

// A RecordedRequest is a request as a Cassette holds it.
type RecordedRequest struct {
	Method string
	// Path is the path as it was sent, escaped: the base URL's own path,
	// then the path prefix and the endpoint's path.
	Path string
	// Query is the query as it was sent, "" for none.
	Query string
	// Header holds the request's Authorization (its scheme and a
	// placeholder) and Content-Type. Other headers are not recorded: the
	// User-Agent names the SDK's version and trace headers change with
	// every run, and neither says what was asked.
	Header http.Header
	// Body is the body, "" for none.
	Body string
}

// A RecordedResponse is an answer as a Cassette holds it, or the error of
// a request that got none.
type RecordedResponse struct {
	// Status is the status code, 0 when no answer came (see Error).
	Status int
	// Header holds the answer's headers but Content-Length (the replay
	// sets it) and Date; the value of a header whose name says it carries
	// a credential (a cookie, a key, a token) is a placeholder.
	Header http.Header
	// Body is the body, "" for none.
	Body string
	// Cut says that the answer ended early: reading its body failed after
	// Body. The replay fails the read there too.
	Cut bool
	// Error is, for a request that got no answer, the text of its error
	// (a connection refused or closed); "" otherwise.
	Error string
}

// cassetteVersion is the format of the files this package writes; a file
// of another declares so, and LoadCassette refuses it.
const cassetteVersion = 1

// The file's shape: the struct above with version and bodies as JSON.
type (
	cassetteFile struct {
		Cassette     int               `json:"cassette"`
		BaseURL      string            `json:"base_url"`
		Interactions []interactionFile `json:"interactions"`
	}
	interactionFile struct {
		Request  requestFile  `json:"request"`
		Response responseFile `json:"response"`
	}
	requestFile struct {
		Method string     `json:"method"`
		Path   string     `json:"path"`
		Query  string     `json:"query,omitempty"`
		Header headerFile `json:"header,omitempty"`
		bodyFile
	}
	responseFile struct {
		Status int        `json:"status,omitempty"`
		Header headerFile `json:"header,omitempty"`
		bodyFile
		Cut   bool   `json:"cut,omitempty"`
		Error string `json:"error,omitempty"`
	}
	// bodyFile is a body: JSON as it is, anything else as a string.
	bodyFile struct {
		Body     json.RawMessage `json:"body,omitempty"`
		BodyText *string         `json:"body_text,omitempty"`
	}
)

// headerFile is a header as the file holds it: a name with one value
// maps to it, a name with more to their list.
type headerFile http.Header

// MarshalJSON writes a name with one value as a string, so that a
// reviewer reads a cassette's headers as they were sent, and without HTML
// escaping, so that a value such as <https://...> reads as it was.
func (h headerFile) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(h))
	for name, values := range h {
		if len(values) == 1 {
			m[name] = values[0]
		} else {
			m[name] = values
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(m)
	return buf.Bytes(), err
}

// UnmarshalJSON takes either form MarshalJSON writes, a string or a list,
// so that a cassette edited by hand may use either.
func (h *headerFile) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*h = make(headerFile, len(m))
	for name, raw := range m {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			(*h)[name] = []string{one}
			continue
		}
		var many []string
		if err := json.Unmarshal(raw, &many); err != nil {
			return fmt.Errorf("header %s: want a string or a list of strings", name)
		}
		(*h)[name] = many
	}
	return nil
}

func toBodyFile(body string) bodyFile {
	switch {
	case body == "":
		return bodyFile{}
	case json.Valid([]byte(body)):
		return bodyFile{Body: json.RawMessage(body)}
	}
	return bodyFile{BodyText: &body}
}

func (b bodyFile) text() string {
	if b.BodyText != nil {
		return *b.BodyText
	}
	var out bytes.Buffer
	if len(b.Body) > 0 && json.Compact(&out, b.Body) == nil {
		return out.String()
	}
	return string(b.Body)
}

// encode returns the file of c.
func (c *Cassette) encode() ([]byte, error) {
	f := cassetteFile{Cassette: cassetteVersion, BaseURL: c.BaseURL, Interactions: make([]interactionFile, len(c.Interactions))}
	for i, in := range c.Interactions {
		q, r := in.Request, in.Response
		f.Interactions[i] = interactionFile{
			Request:  requestFile{Method: q.Method, Path: q.Path, Query: q.Query, Header: headerFile(q.Header), bodyFile: toBodyFile(q.Body)},
			Response: responseFile{Status: r.Status, Header: headerFile(r.Header), bodyFile: toBodyFile(r.Body), Cut: r.Cut, Error: r.Error},
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "<" and "&" stay readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// LoadCassette reads the cassette file at path, as a Recorder wrote it
// (and perhaps a person edited it since). The file holds one JSON object,
// and white space after it at most: other text after it (a second
// cassette, the tail of a merge conflict) is an error that names the file
// and the offset where that text starts.
func LoadCassette(path string) (*Cassette, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("managementtest: %w", err)
	}
	c, err := decodeCassette(data)
	if err != nil {
		return nil, fmt.Errorf("managementtest: cassette %s: %w", path, err)
	}
	c.file = path
	return c, nil
}

func decodeCassette(data []byte) (*Cassette, error) {
	var f cassetteFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // a misspelt member of a hand edit is an error, not ignored
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	// One object, then white space only: text after it (a second cassette,
	// a merge conflict's tail) would otherwise be ignored unseen.
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("text after the cassette's JSON object, at offset %d: a file holds one cassette", len(data)-len(rest))
	}
	if f.Cassette != cassetteVersion {
		return nil, fmt.Errorf("format %d, want %d (record it again)", f.Cassette, cassetteVersion)
	}
	if _, err := parseBase(f.BaseURL); err != nil {
		return nil, err
	}
	c := &Cassette{BaseURL: f.BaseURL, Interactions: make([]Interaction, len(f.Interactions))}
	for i, in := range f.Interactions {
		q, r := in.Request, in.Response
		if q.Method == "" || !strings.HasPrefix(q.Path, "/") {
			return nil, fmt.Errorf("interaction %d: a request needs a method and a path starting with /", i+1)
		}
		if (r.Status == 0) == (r.Error == "") || (r.Status != 0 && (r.Status < 100 || r.Status > 599)) {
			return nil, fmt.Errorf("interaction %d: an answer needs a status from 100 to 599, or an error instead", i+1)
		}
		c.Interactions[i] = Interaction{
			Request:  RecordedRequest{Method: q.Method, Path: q.Path, Query: q.Query, Header: http.Header(q.Header), Body: q.text()},
			Response: RecordedResponse{Status: r.Status, Header: http.Header(r.Header), Body: r.text(), Cut: r.Cut, Error: r.Error},
		}
	}
	return c, nil
}

// writeFile writes data to path through a temporary file in the same
// directory, so that a cassette is never left half written.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil { // a file to commit, as any other
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// parseBase parses a base URL as management.Config takes it: absolute
// http or https, without user info, query or fragment, which a cassette
// would otherwise hold (a password in user info, a key in a query). Its
// errors never quote what they refuse.
func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return nil, errors.New("a base URL is not an absolute http or https URL")
	case u.User != nil:
		return nil, errors.New("a base URL holds user info: the client id and secret go in the Config, never in a URL")
	case strings.ContainsAny(raw, "?#"): // a query or fragment, even an empty one
		return nil, errors.New("a base URL has a query or fragment")
	}
	return u, nil
}

// sameBase reports whether two parsed base URLs name the same service:
// scheme and host alike but for case, the same port (default ports
// written or not), the same path but for a trailing slash.
func sameBase(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) &&
		port(a) == port(b) && strings.TrimSuffix(a.EscapedPath(), "/") == strings.TrimSuffix(b.EscapedPath(), "/")
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// basePathOf is the path of a base URL, escaped, without a trailing
// slash: what precedes the path prefix in every request's path.
func basePathOf(u *url.URL) string { return strings.TrimSuffix(u.EscapedPath(), "/") }

// basePath is the path of the cassette's base URL (see basePathOf).
func (c *Cassette) basePath() string {
	u, err := parseBase(c.BaseURL)
	if err != nil {
		return ""
	}
	return basePathOf(u)
}

// pathPrefix is the path prefix the recorded requests were sent with:
// what the path of a token or authenticate request holds between the base
// URL's path and the endpoint (their paths have no parameter, so they
// tell it best), else that of the first request to an endpoint, else
// DefaultPathPrefix.
func (c *Cassette) pathPrefix() string {
	base := c.basePath()
	fallback, found := "", false
	for _, in := range c.Interactions {
		p, ok := belowBase(base, in.Request.Path)
		if !ok {
			continue
		}
		route, prefix, _, ok := matchRoute(in.Request.Method, p)
		switch {
		case !ok:
		case route.is(tokenEndpoint) || route.is(authenticateEndpoint):
			return unescapedOr(prefix)
		case !found:
			fallback, found = unescapedOr(prefix), true
		}
	}
	if found {
		return fallback
	}
	return DefaultPathPrefix
}

// unescapedOr is a prefix as WithPathPrefix takes it, or DefaultPathPrefix
// when a path edited by hand gives none.
func unescapedOr(escaped string) string {
	if escaped == "" {
		return "/"
	}
	p, err := url.PathUnescape(escaped)
	if err != nil || !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#") {
		return DefaultPathPrefix
	}
	return p
}
