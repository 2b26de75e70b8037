package managementtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/serviceconnect/management/internal/redact"
)

// Placeholders. A cassette holds none of the credentials an exchange
// carries: each is learnt where it stands by position (the Authorization
// header, the access_token of the token answer and of an authenticate
// body), named by a placeholder of its kind and number in the order met,
// "{{management_token_1}}", and replaced by it wherever a text holds it in
// any form internal/redact knows (the SDK's own redactor: base64, JSON,
// HTML and percent escapes, once or more). The replay learns the values
// its requests carry in the same places and order, so that a request
// matches its recording whatever tokens the test runs with.

// The kinds of credential, as their placeholders name them.
const (
	kindClientSecret      = "client_secret"
	kindClientCredentials = "client_credentials" // "<id>:<secret>", and so the Basic value
	kindManagementToken   = "management_token"
	kindEndUserToken      = "end_user_token"
	kindRedacted          = "redacted" // a header that carries a credential by its name
)

// A credential learnt, and its placeholder.
type credential struct {
	value       string
	forms       []string // value and what holds it whole: "Bearer <token>", a Basic value
	placeholder string
	redactor    *redact.Redactor // of forms, so that a span names this credential
}

// credentials are the credentials learnt from exchanges, in the order met.
// Not safe for concurrent use.
type credentials struct {
	list  []credential
	count map[string]int // per kind
}

// isPlaceholder reports whether v is a placeholder of a token, which is
// never learnt as a credential (a replay's token is the recorded
// placeholder): "{{" and a kind, "_" and a number, "}}".
func isPlaceholder(v string) bool {
	inner, ok := strings.CutPrefix(v, "{{")
	inner, closed := strings.CutSuffix(inner, "}}")
	if !ok || !closed {
		return false
	}
	i := strings.LastIndexByte(inner, '_')
	if i < 0 || i == len(inner)-1 || strings.Trim(inner[i+1:], "0123456789") != "" {
		return false
	}
	switch inner[:i] {
	case kindClientSecret, kindClientCredentials, kindManagementToken, kindEndUserToken:
		return true
	}
	return false
}

// learn notes value as a credential of kind and returns its placeholder:
// the one it already has, if it was learnt before under any kind. forms
// are texts that hold value whole and are echoed as one (base64 encodes
// "Bearer <token>" otherwise than the token alone): they are replaced by
// the same placeholder.
func (c *credentials) learn(value, kind string, forms ...string) string {
	value = strings.TrimSpace(value)
	if value == "" || isPlaceholder(value) {
		return value
	}
	i := slices.IndexFunc(c.list, func(cr credential) bool { return cr.value == value })
	if i < 0 {
		if c.count == nil {
			c.count = make(map[string]int)
		}
		c.count[kind]++
		c.list = append(c.list, credential{value: value, forms: []string{value}, placeholder: fmt.Sprintf("{{%s_%d}}", kind, c.count[kind])})
		i = len(c.list) - 1
	}
	cr := &c.list[i]
	for _, f := range forms {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(cr.forms, f) {
			cr.forms = append(cr.forms, f)
			cr.redactor = nil
		}
	}
	if cr.redactor == nil {
		cr.redactor = redact.New(cr.forms...)
	}
	return cr.placeholder
}

// learnToken learns the token of "<scheme> <token>" (or a bare token) as
// a credential of kind, and returns v with the token replaced.
func (c *credentials) learnToken(v, kind string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok {
		return c.learn(scheme, kind, "Bearer "+scheme)
	}
	return scheme + " " + c.learn(tok, kind, scheme+" "+tok, "Bearer "+tok)
}

// values returns every form of every credential learnt.
func (c *credentials) values() []string {
	var out []string
	for _, cr := range c.list {
		out = append(out, cr.forms...)
	}
	return out
}

// learnAuthorization learns the credential of an Authorization value and
// returns the value with the credential replaced: "Bearer <token>" holds a
// management token; "Basic <base64 of id:secret>" the client credentials
// (and the secret, alone); a value without a scheme is a token. With
// basic false (a replay), Basic credentials are neither learnt nor
// replaced: the replay's are the test's own, which a request never
// carries elsewhere.
func (c *credentials) learnAuthorization(v string, basic bool) string {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok {
		scheme, cred = "", scheme
	}
	if strings.EqualFold(scheme, "Basic") {
		if !basic {
			return v
		}
		cred = strings.TrimSpace(cred)
		if raw, err := base64.StdEncoding.DecodeString(cred); err == nil {
			if _, secret, ok := strings.Cut(string(raw), ":"); ok {
				c.learn(secret, kindClientSecret)
				return scheme + " " + c.learn(string(raw), kindClientCredentials, cred, scheme+" "+cred)
			}
		}
		return scheme + " " + c.learn(cred, kindClientCredentials, scheme+" "+cred)
	}
	return c.learnToken(v, kindManagementToken)
}

// learnRequestBody learns the credentials a request body carries by
// position: the access_token of an authenticate body ("<type> <token>",
// an End User token unless it is a management token learnt before) and a
// client_secret member. It returns the body with them replaced.
func (c *credentials) learnRequestBody(body string) string {
	body = c.replaceMember(body, "client_secret", func(v string) string { return c.learn(v, kindClientSecret) })
	return c.replaceMember(body, "access_token", func(v string) string { return c.learnToken(v, kindEndUserToken) })
}

// learnTokenAnswer learns the management token of a token answer's body
// and returns the body with it replaced.
func (c *credentials) learnTokenAnswer(body string) string {
	return c.replaceMember(body, "access_token", func(v string) string { return c.learnToken(v, kindManagementToken) })
}

// replaceMember replaces the value of each string member key of the JSON
// object body by what with returns for it, keeping the rest of the body
// as it is (members in their order, numbers as written). A body that is
// not a JSON object is returned as it is.
func (c *credentials) replaceMember(body, key string, with func(string) string) string {
	spans := memberSpans(body, key)
	if len(spans) == 0 {
		return body
	}
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		var v string
		if json.Unmarshal([]byte(body[sp.Start:sp.End]), &v) != nil {
			continue
		}
		enc, _ := json.Marshal(with(v))
		b.WriteString(body[at:sp.Start])
		b.Write(enc)
		at = sp.End
	}
	b.WriteString(body[at:])
	return b.String()
}

// memberSpans returns where, in the JSON object data, the string values of
// its members named key stand (quotes included).
func memberSpans(data, key string) []redact.Span {
	dec := json.NewDecoder(strings.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var spans []redact.Span
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return nil
		}
		from := int(dec.InputOffset()) // just after the name: a colon and spaces, then the value
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil
		}
		to := int(dec.InputOffset())
		if name != key || len(raw) == 0 || raw[0] != '"' {
			continue
		}
		start := from + strings.IndexByte(data[from:to], '"')
		spans = append(spans, redact.Span{Start: start, End: to})
	}
	return spans
}

// replace returns text with every credential learnt, in any form an echo
// takes, replaced by its placeholder; cut says that the text ended early,
// so that a credential's start at its end is replaced too. Where two
// credentials' echoes overlap, the run is one placeholder, the one of the
// echo that starts first (the longer one when two start together).
func (c *credentials) replace(text string, cut bool) string {
	if len(c.list) == 0 || text == "" {
		return text
	}
	type labelled struct {
		redact.Span
		placeholder string
	}
	var all []labelled
	for _, cr := range c.list {
		for _, sp := range cr.redactor.Spans(text, cut) {
			all = append(all, labelled{sp, cr.placeholder})
		}
	}
	if len(all) == 0 {
		return text
	}
	slices.SortFunc(all, func(a, b labelled) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return b.End - a.End
	})
	var b strings.Builder
	at := 0
	for i := 0; i < len(all); {
		run := all[i]
		for i++; i < len(all) && all[i].Start < run.End; i++ {
			run.End = max(run.End, all[i].End)
		}
		b.WriteString(text[at:run.Start])
		b.WriteString(run.placeholder)
		at = run.End
	}
	b.WriteString(text[at:])
	return b.String()
}

// header returns the headers of names (canonical) that h holds, each value
// with the credentials replaced, and nil when it holds none of them. A
// header whose name says it carries a credential keeps its name only.
func (c *credentials) header(h http.Header, keep func(name string) bool) http.Header {
	var out http.Header
	for name, values := range h {
		name = http.CanonicalHeaderKey(name)
		if !keep(name) {
			continue
		}
		if out == nil {
			out = make(http.Header)
		}
		for _, v := range values {
			if redact.CredentialHeader(name) {
				v = "{{" + kindRedacted + "}}"
			} else {
				v = c.replace(v, false)
			}
			out[name] = append(out[name], v)
		}
	}
	return out
}
