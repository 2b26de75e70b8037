package managementtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/serviceconnect/management/internal/redact"
)

// Placeholders. A cassette holds none of the credentials an exchange
// carries: each is learnt where it stands by position (see
// learnAuthorization, learnRequestBody and learnTokenAnswer), named by a placeholder of its kind and number in
// the order met, "{{management_token_1}}", and replaced by it wherever a
// text holds it in any form internal/redact knows (the SDK's own
// redactor: base64, JSON, HTML and percent escapes, once or more). The
// replay learns the values its requests carry in the same places and
// order, so that a request matches its recording whatever credentials
// the test runs with.
//
// Each text is given once to one redact.Redactor that holds the forms of
// every credential learnt (to a few, for a replay, which learns as it
// goes: see engines); it finds them all in one pass, in time that does not
// grow with their number, and names the credential of each span it finds.

// The kinds of credential, as their placeholders name them.
const (
	kindClientSecret      = "client_secret"
	kindClientCredentials = "client_credentials" // "<id>:<secret>", and so the Basic value
	kindManagementToken   = "management_token"
	kindRefreshToken      = "refresh_token"
	kindIDToken           = "id_token"
	kindEndUserToken      = "end_user_token"
	// A client id sent in a token request's body: replaced there, by
	// position, so that a replay with another id matches; no secret, so
	// not searched for elsewhere.
	kindClientID = "client_id"
	kindRedacted = "redacted" // a header that carries a credential by its name
)

// A credential learnt, and its placeholder.
type credential struct {
	value       string
	forms       []string // value and what holds it whole: "Bearer <token>", a Basic value
	placeholder string
}

// credentials are the credentials learnt from exchanges, in the order met.
// Not safe for concurrent use.
type credentials struct {
	list    []credential
	byValue map[string]int    // value -> index in list
	count   map[string]int    // per kind
	ids     map[string]string // client id -> its placeholder
	// The engines: tiers of forms, each with its Redactor, the older and
	// larger first, and the forms learnt since the last one was made, with
	// the credential of each.
	tiers   []tier
	pending forms
}

// forms are forms learnt, each with the index of its credential.
type forms struct {
	forms []string
	owner []int
}

// tier is one engine over some of the forms learnt: its credential i is
// forms.forms[i], of the credential forms.owner[i].
type tier struct {
	forms
	r *redact.Redactor
}

// isPlaceholder reports whether v is a placeholder of a credential, which
// is never learnt as one (a replay's token is the recorded placeholder):
// "{{" and a kind, "_" and a number, "}}".
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
	case kindClientSecret, kindClientCredentials, kindManagementToken, kindRefreshToken, kindIDToken, kindEndUserToken, kindClientID:
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
	i, ok := c.byValue[value]
	if !ok {
		if c.count == nil {
			c.count, c.byValue = make(map[string]int), make(map[string]int)
		}
		c.count[kind]++
		i = len(c.list)
		c.byValue[value] = i
		c.list = append(c.list, credential{value: value, placeholder: placeholder(kind, c.count[kind])})
		c.addForm(i, value)
	}
	for _, f := range forms {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(c.list[i].forms, f) {
			c.addForm(i, f)
		}
	}
	return c.list[i].placeholder
}

func placeholder(kind string, n int) string { return fmt.Sprintf("{{%s_%d}}", kind, n) }

// addForm adds form f to credential i: to its forms, and to the next
// engine.
func (c *credentials) addForm(i int, f string) {
	c.list[i].forms = append(c.list[i].forms, f)
	c.pending.forms = append(c.pending.forms, f)
	c.pending.owner = append(c.pending.owner, i)
}

// learnID returns the placeholder of a client id, met by position.
func (c *credentials) learnID(id string) string {
	id = strings.TrimSpace(id)
	if id == "" || isPlaceholder(id) {
		return id
	}
	if p, ok := c.ids[id]; ok {
		return p
	}
	if c.ids == nil {
		c.ids = make(map[string]string)
	}
	c.ids[id] = placeholder(kindClientID, len(c.ids)+1)
	return c.ids[id]
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

// learnAuthorization learns the credential of an Authorization value and
// returns the value with the credential replaced: "Bearer <token>" (any
// scheme, in any case) holds a token, a management token unless it was
// learnt as another; "Basic <base64 of id:secret>" the client credentials
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

// headerValues returns the values of the header name in h under any
// spelling of the name: a request made by hand may hold "authorization".
// The spellings are taken in sorted order.
func headerValues(h http.Header, name string) []string {
	var keys []string
	for k := range h {
		if strings.EqualFold(k, name) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		out = append(out, h[k]...)
	}
	return out
}

// learnRequestBody learns the credentials a request body to route carries
// by position, in a JSON object or a form (application/x-www-form-
// urlencoded, as OAuth 2.0's client_secret_post sends): a client_secret,
// a refresh_token, an access_token ("<type> <token>", an End User token
// unless it was learnt as another) and, in a token request, the
// client_id. It returns the body with them replaced.
func (c *credentials) learnRequestBody(body string, route Route) string {
	token := route.is(tokenEndpoint)
	return replaceMembers(body, func(key, v string) (string, bool) {
		switch {
		case key == "client_secret":
			return c.learn(v, kindClientSecret), true
		case key == "refresh_token":
			return c.learn(v, kindRefreshToken), true
		case key == "access_token":
			return c.learnToken(v, kindEndUserToken), true
		case key == "client_id" && token:
			return c.learnID(v), true
		}
		return "", false
	})
}

// learnTokenAnswer learns the tokens of a token answer's body, JSON or a
// form, cut short or whole (access_token, a management token;
// refresh_token; id_token), and returns the body with them replaced.
func (c *credentials) learnTokenAnswer(body string) string {
	return replaceMembers(body, func(key, v string) (string, bool) {
		switch key {
		case "access_token":
			return c.learnToken(v, kindManagementToken), true
		case "refresh_token":
			return c.learn(v, kindRefreshToken), true
		case "id_token":
			return c.learn(v, kindIDToken), true
		}
		return "", false
	})
}

// bodyMember is where a member's string value stands in a body, its key, and
// the value decoded.
type bodyMember struct {
	redact.Span
	key, value string
	json       bool // a JSON string, quotes included in the span; else a form's value
}

// replaceMembers replaces the value of each member of body (a JSON object,
// or else a form) for which with returns a replacement, keeping the rest
// of body as it is (members in their order, numbers as written).
func replaceMembers(body string, with func(key, value string) (string, bool)) string {
	var b strings.Builder
	at, changed := 0, false
	for _, m := range members(body) {
		v, ok := with(m.key, m.value)
		if !ok {
			continue
		}
		changed = true
		b.WriteString(body[at:m.Start])
		if m.json {
			enc, _ := json.Marshal(v)
			b.Write(enc)
		} else {
			b.WriteString(v)
		}
		at = m.End
	}
	if !changed {
		return body
	}
	b.WriteString(body[at:])
	return b.String()
}

// members returns the string members of body: those of a JSON object
// (whole, or the ones before where it is cut or malformed, and a string
// value that runs to its end), else the fields of a form.
func members(body string) []bodyMember {
	if strings.HasPrefix(strings.TrimLeft(body, " \t\r\n"), "{") {
		return jsonMembers(body)
	}
	return formMembers(body)
}

// jsonMembers returns the string values of the members of the JSON
// object data, and where they stand (quotes included). Where data is cut
// or malformed, it returns the members before; a string value that starts
// there runs to its closing quote, or to the end of data.
func jsonMembers(data string) []bodyMember {
	dec := json.NewDecoder(strings.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []bodyMember
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := name.(string)
		from := int(dec.InputOffset()) // just after the name: a colon and spaces, then the value
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if m, ok := cutString(data, from, key); ok {
				out = append(out, m)
			}
			return out
		}
		to := int(dec.InputOffset())
		var v string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &v) != nil {
			continue
		}
		start := from + strings.IndexByte(data[from:to], '"')
		out = append(out, bodyMember{Span: redact.Span{Start: start, End: to}, key: key, value: v, json: true})
	}
	return out
}

// cutString returns the string value of key that starts after from in
// data, a JSON text that is cut or malformed there: it runs to its
// closing quote, or to the end of data. Its value is what decodes of it.
func cutString(data string, from int, key string) (bodyMember, bool) {
	rest := strings.TrimLeft(data[from:], " \t\r\n")
	rest, ok := strings.CutPrefix(rest, ":")
	rest = strings.TrimLeft(rest, " \t\r\n")
	if !ok || !strings.HasPrefix(rest, `"`) {
		return bodyMember{}, false
	}
	start := len(data) - len(rest)
	end := len(data)
	for i := start + 1; i < len(data); i++ {
		if data[i] == '\\' {
			i++
		} else if data[i] == '"' {
			end = i + 1
			break
		}
	}
	inner := strings.TrimSuffix(data[start+1:end], `"`)
	v := inner
	for n := len(inner); n >= 0 && n >= len(inner)-maxEscapeLen; n-- { // without an escape the cut split
		var s string
		if json.Unmarshal([]byte(`"`+inner[:n]+`"`), &s) == nil {
			v = s
			break
		}
	}
	return bodyMember{Span: redact.Span{Start: start, End: end}, key: key, value: v, json: true}, true
}

// maxEscapeLen is the longest JSON escape, a surrogate pair's.
const maxEscapeLen = len(`\ud83d\ude00`)

// formMembers returns the fields of the form data ("a=b&c=d"), with
// where each value stands and its value decoded.
func formMembers(data string) []bodyMember {
	var out []bodyMember
	for at := 0; at <= len(data); {
		end := strings.IndexByte(data[at:], '&')
		if end < 0 {
			end = len(data)
		} else {
			end += at
		}
		if eq := strings.IndexByte(data[at:end], '='); eq >= 0 {
			key, err1 := url.QueryUnescape(data[at : at+eq])
			value, err2 := url.QueryUnescape(data[at+eq+1 : end])
			if err2 != nil {
				value = data[at+eq+1 : end]
			}
			if err1 == nil {
				out = append(out, bodyMember{Span: redact.Span{Start: at + eq + 1, End: end}, key: key, value: value})
			}
		}
		at = end + 1
	}
	return out
}

// engines returns the Redactors that hold every form learnt: the tiers,
// after making one of the forms learnt since the last call. A tier at
// least as large as the one before it is merged into it, so that there
// are at most about log2 of the forms learnt, and each form is put in a
// Redactor that many times at most (joining two is linear in their forms). A
// recording, which learns every credential before it replaces any, has
// one.
func (c *credentials) engines() []tier {
	if len(c.pending.forms) > 0 {
		c.tiers = append(c.tiers, tier{forms: c.pending, r: redact.New(c.pending.forms...)})
		c.pending = forms{}
	}
	for n := len(c.tiers); n >= 2 && len(c.tiers[n-1].forms.forms) >= len(c.tiers[n-2].forms.forms); n = len(c.tiers) {
		older, newer := c.tiers[n-2], c.tiers[n-1]
		fs := forms{append(slices.Clip(older.forms.forms), newer.forms.forms...), append(slices.Clip(older.owner), newer.owner...)}
		c.tiers = append(c.tiers[:n-2], tier{forms: fs, r: older.r.Join(newer.r)})
	}
	return c.tiers
}

// spans returns the runs of text that hold a credential learnt, in any
// form an echo takes, in order and disjoint, each with Cred the index of
// its credential in c.list (see redact.Spans); cut says that the text
// ended early, so that a credential's start at its end counts. It is one
// search of text per engine. Where the engines' runs overlap, the one that
// starts first takes the run (the longer when two start together).
func (c *credentials) spans(text string, cut bool) []redact.Span {
	if len(c.list) == 0 || text == "" {
		return nil
	}
	var all []redact.Span
	engines := c.engines()
	for _, e := range engines {
		for _, sp := range e.r.Spans(text, cut) {
			sp.Cred = e.owner[sp.Cred]
			all = append(all, sp)
		}
	}
	if len(engines) == 1 {
		return all
	}
	slices.SortFunc(all, func(a, b redact.Span) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return b.End - a.End
	})
	var runs []redact.Span
	for _, sp := range all {
		if n := len(runs); n > 0 && (sp.Start < runs[n-1].End || sp.Start == runs[n-1].End && sp.Cred == runs[n-1].Cred) {
			runs[n-1].End = max(runs[n-1].End, sp.End)
			continue
		}
		runs = append(runs, sp)
	}
	return runs
}

// replace returns text with every credential learnt, in any form an echo
// takes, replaced by its placeholder; cut says that the text ended early,
// so that a credential's start at its end is replaced too.
func (c *credentials) replace(text string, cut bool) string {
	runs := c.spans(text, cut)
	if len(runs) == 0 {
		return text
	}
	var b strings.Builder
	at := 0
	for _, run := range runs {
		b.WriteString(text[at:run.Start])
		b.WriteString(c.list[run.Cred].placeholder)
		at = run.End
	}
	b.WriteString(text[at:])
	return b.String()
}

// leaked reports whether text, with its placeholders blanked, still
// holds a credential learnt in any form: the last check before a cassette
// is written. The placeholders are blanked first, so that a short
// credential that is a word of one ("secret") is not taken for an echo.
func (c *credentials) leaked(text string) bool {
	return len(c.spans(blankPlaceholders(text), false)) > 0
}

// maxPlaceholder bounds the length of a placeholder, so that blanking
// them looks a bounded way past each "{{".
const maxPlaceholder = 48

// blankPlaceholders returns text with each placeholder, and each
// "{{redacted}}", replaced by a space.
func blankPlaceholders(text string) string {
	return replacePlaceholders(text, func(p string) (string, bool) { return " ", true })
}

// replacePlaceholders returns text with each placeholder p (and each
// "{{redacted}}") for which with returns true replaced by what it
// returns, in one pass.
func replacePlaceholders(text string, with func(p string) (string, bool)) string {
	var b strings.Builder
	at := 0
	for i := 0; ; {
		open := strings.Index(text[i:], "{{")
		if open < 0 {
			break
		}
		open += i
		i = open + 1
		end := strings.Index(text[open+2:min(len(text), open+maxPlaceholder)], "}}")
		if end < 0 {
			continue
		}
		end += open + 4
		p := text[open:end]
		if !isPlaceholder(p) && p != "{{"+kindRedacted+"}}" {
			continue
		}
		if v, ok := with(p); ok {
			b.WriteString(text[at:open])
			b.WriteString(v)
			at, i = end, end
		}
	}
	if at == 0 {
		return text
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
